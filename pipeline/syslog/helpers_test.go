package syslog_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/pipeline/syslog"
)

// sink collects copies of the messages a Listener delivers.
type sink struct {
	mu   sync.Mutex
	msgs []syslog.Message
	// block, when set, is waited on by every handler call (after entered
	// is signalled), to play a stuck consumer.
	block   chan struct{}
	entered chan struct{}
}

func (s *sink) handle(m *syslog.Message) {
	c := *m
	c.Content = bytes.Clone(m.Content)
	if s.block != nil {
		select {
		case s.entered <- struct{}{}:
		default:
		}
		<-s.block
	}
	s.mu.Lock()
	s.msgs = append(s.msgs, c)
	s.mu.Unlock()
}

func (s *sink) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.msgs)
}

func (s *sink) all() []syslog.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]syslog.Message(nil), s.msgs...)
}

// patience is how long a test waits for the listener to do something.
const patience = 10 * time.Second

type running struct {
	l    *syslog.Listener
	reg  *prometheus.Registry
	sink *sink
	stop func() time.Duration // cancels Run and returns how long it took to return
}

func testConfig() syslog.Config {
	cfg := syslog.DefaultConfig()
	cfg.ListenUDP = "127.0.0.1:0"
	cfg.ListenTCP = "127.0.0.1:0"
	cfg.Timezone = "UTC"
	return cfg
}

func start(t testing.TB, cfg syslog.Config, s *sink) *running {
	t.Helper()
	if s == nil {
		s = &sink{}
	}
	reg := prometheus.NewRegistry()
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	l, err := syslog.New(cfg, s.handle, logger, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	var once sync.Once
	var took time.Duration
	stop := func() time.Duration {
		once.Do(func() {
			begin := time.Now()
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return after cancel")
			}
			took = time.Since(begin)
		})
		return took
	}
	t.Cleanup(func() { stop() })
	return &running{l: l, reg: reg, sink: s, stop: stop}
}

// metric returns the value of the series of name whose labels include
// the given name=value pairs (all series summed when none are given).
func (r *running) metric(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := r.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue series
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

func (r *running) malformed(t testing.TB, reason string) float64 {
	return r.metric(t, "pagewatch_ingest_syslog_malformed_messages_total", "reason", reason)
}

func (r *running) dialTCP(t testing.TB) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", r.l.TCPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (r *running) dialUDP(t testing.TB) net.Conn {
	t.Helper()
	c, err := net.Dial("udp", r.l.UDPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// accessLine is a distinct, realistic access-log line for message i.
func accessLine(i int) string {
	return fmt.Sprintf(`203.0.113.%d - - [22/Nov/2024:10:%02d:%02d +0000] "GET /page/%d?q=%%22x%%22 HTTP/1.1" 200 %d "https://example.com/\"r\"" "Mozilla/5.0 (X11; Linux x86_64) #%d"`,
		i%256, i/60%60, i%60, i, i*7%100000, i)
}

// nginx3164 is what nginx sends for line: its exact header.
func nginx3164(line string) string { return "<190>Nov 22 10:00:00 web1 nginx: " + line }

func rsyslog5424(line string) string {
	return `<190>1 2024-11-22T10:00:00.123456+00:00 web2 nginx 4242 access [origin ip="192.0.2.1" x="a\"b\]c"] ` + line
}

func octet(msg string) string { return fmt.Sprintf("%d %s", len(msg), msg) }

// wantContents checks that the sink holds exactly the given contents, in
// any order.
func wantContents(t *testing.T, s *sink, want []string) {
	t.Helper()
	got := map[string]int{}
	for _, m := range s.all() {
		got[string(m.Content)]++
	}
	if len(s.all()) != len(want) {
		t.Fatalf("got %d messages, want %d", len(s.all()), len(want))
	}
	for _, w := range want {
		if got[w] == 0 {
			t.Fatalf("missing %q", w)
		}
		got[w]--
	}
}
