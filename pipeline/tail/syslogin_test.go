package tail_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/pipeline/tail"
)

func nginxSyslog(line []byte) []byte {
	return append([]byte("<190>Nov 22 10:00:00 web1 nginx: "), line...)
}

// The real log over TCP (newline framing, as one write) and over UDP
// (one datagram a line, paced so that no datagram is dropped), while a
// file is followed beside them: each transport's 10,000 lines are 10,000
// hits on the syslog subject, each line once, and the file's are its own.
func TestSyslogBesideFiles(t *testing.T) {
	b := setup(t)
	b.cfg.Syslog.ListenUDP = "127.0.0.1:0"
	b.cfg.Syslog.ListenTCP = "127.0.0.1:0"
	b.cfg.Syslog.Timezone = "UTC"
	b.cfg.Syslog.Tags = []string{"nginx"}
	b.cfg.SyslogInput.Site = "example.com"
	reg := prometheus.NewRegistry()
	tl, err := tail.New(b.cfg, tail.Deps{Bus: b.bus, Logger: b.logger, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := tl.Start(context.Background()); err != nil { // binds the listeners
		t.Fatal(err)
	}
	udpAddr, tcpAddr := tl.SyslogAddrs()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx) }()

	appendLines(t, b.log, b.lines[:1000])
	var framed bytes.Buffer
	for _, l := range b.lines {
		framed.Write(nginxSyslog(l))
		framed.WriteByte('\n')
	}
	tc, err := net.Dial("tcp", tcpAddr.String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.Write(framed.Bytes()); err != nil {
		t.Fatal(err)
	}
	tc.Close()
	uc, err := net.Dial("udp", udpAddr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	delivered := func() float64 {
		return counter(t, reg, "pagewatch_ingest_syslog_messages_delivered_total", "transport", "udp")
	}
	for i, l := range b.lines {
		if _, err := uc.Write(nginxSyslog(l)); err != nil {
			t.Fatal(err)
		}
		if i%200 == 199 {
			testcheck.Eventually(t, 20*time.Second, "UDP delivery", func() bool { return delivered() == float64(i+1) })
		}
	}

	testcheck.Eventually(t, 20*time.Second, "every syslog line published", func() bool {
		n := 0
		for _, ms := range b.streamMsgs(t, "syslog") {
			n += len(hitsOf(ms))
		}
		return n == 2*len(b.lines)
	})
	testcheck.Eventually(t, 20*time.Second, "the file's lines published", func() bool { return len(b.subjectHits(t, b.log)) == 1000 })
	msgs := b.streamMsgs(t, "syslog")
	if len(msgs) != 2 {
		t.Fatalf("%d streams on the syslog subject, want udp and tcp", len(msgs))
	}
	for name, ms := range msgs {
		if !strings.HasPrefix(name, "syslog-udp.") && !strings.HasPrefix(name, "syslog-tcp.") {
			t.Fatalf("stream %q", name)
		}
		sameLines(t, name, hitsOf(ms), b.lines)
	}
	if n := counter(t, reg, "pagewatch_ingest_tail_lines_total", "result", "hit"); n != 21000 {
		t.Fatalf("lines{hit} = %v, want 21000", n)
	}

	start := time.Now()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Run returned %s after cancel", d)
	}
}

// Syslog alone, with no file: Run keeps listening instead of returning
// because it has no follower, and a quiet sender's line is published
// within flush_interval.
func TestSyslogWithoutFiles(t *testing.T) {
	b := setup(t)
	b.cfg.Inputs = nil
	b.cfg.Syslog.ListenTCP = "127.0.0.1:0"
	b.cfg.SyslogInput.Site = "example.com"
	tl, err := tail.New(b.cfg, tail.Deps{Bus: b.bus, Logger: b.logger, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := tl.Start(context.Background()); err != nil { // binds the listener
		t.Fatal(err)
	}
	_, tcpAddr := tl.SyslogAddrs()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx) }()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Run returned at once: %v", err)
	default:
	}
	c, err := net.Dial("tcp", tcpAddr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := c.Write(append(nginxSyslog(b.lines[0]), '\n')); err != nil {
		t.Fatal(err)
	}
	testcheck.Eventually(t, 20*time.Second, "one hit", func() bool { return len(b.subjectHits(t, "syslog")) == 1 })
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("published after %s; flush_interval is 1s", d)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Stream sections are checked, naming keys, when they are used or set;
// left at their defaults (no site) they are no error.
func TestStreamConfigValidation(t *testing.T) {
	def := tail.DefaultConfig()
	def.Inputs = []tail.Input{{Path: "/var/log/a.log", Site: "example.com"}}
	if err := def.Validate(); err != nil {
		t.Fatalf("defaults with an input: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(c *tail.Config)
		want []string // "" for no error
	}{
		{"stdin only", func(c *tail.Config) { c.Inputs = nil; c.Stdin.Site = "example.com" }, nil},
		{"syslog only", func(c *tail.Config) {
			c.Inputs, c.Syslog.ListenUDP, c.SyslogInput.Format = nil, "127.0.0.1:5514", "vhost_combined"
		}, nil},
		{"nothing", func(c *tail.Config) { c.Inputs = nil }, []string{"ingest.tail.inputs", "ingest.tail.stdin"}},
		{"syslog without site", func(c *tail.Config) { c.Syslog.ListenTCP = "127.0.0.1:5514" },
			[]string{"ingest.tail.syslog_input.site: must be set"}},
		{"bad stdin", func(c *tail.Config) {
			c.Stdin.Format, c.Stdin.NginxFormat, c.Stdin.FlushInterval, c.Stdin.MaxInFlight = "nope", "$host", 0, 0
		}, []string{"ingest.tail.stdin.nginx_format: cannot be given with format", "ingest.tail.stdin.flush_interval", "ingest.tail.stdin.max_in_flight"}},
		{"bad syslog", func(c *tail.Config) { c.Syslog.ListenUDP = "nope" }, []string{"ingest.tail.syslog.listen_udp"}},
	} {
		c := def
		tc.edit(&c)
		err := c.Validate()
		if len(tc.want) == 0 && err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: got %v, want it to say %q", tc.name, err, w)
			}
		}
	}
	if err := def.ValidateStdin(); err == nil || !strings.Contains(err.Error(), `ingest.tail.stdin.site: must be set, since format "combined"`) {
		t.Errorf("ValidateStdin of the defaults: %v", err)
	}
}

// tail.New with no file and no syslog address has nothing to do, even
// with a stdin section: that is read by NewStdin only.
func TestNewRefusesNothingToFollow(t *testing.T) {
	b := setup(t)
	b.cfg.Inputs = nil
	b.cfg.Stdin.Site = "example.com"
	_, err := tail.New(b.cfg, tail.Deps{Bus: b.bus, Logger: b.logger, Registry: prometheus.NewRegistry()})
	if err == nil || !strings.Contains(err.Error(), "nothing to follow") {
		t.Fatalf("got %v", err)
	}
}

// subjectHits is every hit on the subject of key, unchecked.
func (b *bundle) subjectHits(t testing.TB, key string) []hit.Hit {
	t.Helper()
	ctx := context.Background()
	s, err := b.bus.JS.Stream(ctx, b.bus.HitsStreamName())
	if err != nil {
		t.Fatal(err)
	}
	var hs []hit.Hit
	for seq := uint64(1); ; {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(b.bus.HitsSubject(b.cfg.Instance, bus.Key(key))))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return hs
		}
		if err != nil {
			t.Fatal(err)
		}
		seq = m.Sequence + 1
		if hs, err = hit.Decode(m.Data, hs); err != nil {
			t.Fatal(err)
		}
	}
}
