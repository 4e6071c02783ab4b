package syslog_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/pipeline/syslog"
)

func TestUDPManyMessages(t *testing.T) {
	r := start(t, testConfig(), nil)
	c := r.dialUDP(t)
	const n = 20000
	var want []string
	wireBytes := 0
	for i := range n {
		line := accessLine(i)
		if i%10 == 3 {
			line = junkLine
		}
		want = append(want, line)
		msg := nginx3164(line)
		if i%2 == 1 {
			msg = rsyslog5424(line)
		}
		wireBytes += len(msg)
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		// Pace the sender: the socket buffer, not pagewatch, would drop
		// the rest of an unbounded burst.
		if i%500 == 499 {
			testcheck.Eventually(t, patience, "delivery", func() bool { return r.sink.len() == i+1 })
		}
	}
	testcheck.Eventually(t, patience, "delivery", func() bool { return r.sink.len() == n })
	wantContents(t, r.sink, want)
	for _, m := range r.sink.all()[:10] {
		if m.Transport != "udp" || !m.Peer.IsValid() || m.AppName != "nginx" || m.Facility != 23 || m.Severity != 6 || m.Received.IsZero() {
			t.Fatalf("message: %+v", m)
		}
	}
	if got := r.metric(t, "pagewatch_ingest_syslog_messages_received_total", "transport", "udp"); got != n {
		t.Errorf("received %v, want %d", got, n)
	}
	if got := r.metric(t, "pagewatch_ingest_syslog_messages_delivered_total", "transport", "udp"); got != n {
		t.Errorf("delivered %v, want %d", got, n)
	}
	if got := r.metric(t, "pagewatch_ingest_syslog_received_bytes_total", "transport", "udp"); got != float64(wireBytes) {
		t.Errorf("bytes %v, want %d", got, wireBytes)
	}
}

// Many connections at once, both framings, frames split across writes at
// every boundary.
func TestTCPManyConnections(t *testing.T) {
	r := start(t, testConfig(), nil)
	const conns, per = 8, 2500
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		want []string
	)
	for k := range conns {
		c := r.dialTCP(t)
		wg.Go(func() {
			var stream strings.Builder
			var mine []string
			for i := range per {
				line := accessLine(k*per + i)
				mine = append(mine, line)
				msg := nginx3164(line)
				if i%3 == 0 {
					msg = rsyslog5424(line)
				}
				switch {
				case k%2 == 0:
					stream.WriteString(octet(msg))
				case i%2 == 0:
					stream.WriteString(msg + "\n")
				default:
					stream.WriteString(msg + "\x00")
				}
			}
			b := []byte(stream.String())
			for i, size := 0, 1; i < len(b); i, size = i+size, size%1500+1 {
				if _, err := c.Write(b[i:min(i+size, len(b))]); err != nil {
					t.Error(err)
					return
				}
			}
			mu.Lock()
			want = append(want, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	testcheck.Eventually(t, patience, "delivery", func() bool { return r.sink.len() == conns*per })
	wantContents(t, r.sink, want)
	if got := r.metric(t, "pagewatch_ingest_syslog_tcp_connections"); got != conns {
		t.Errorf("open connections %v, want %d", got, conns)
	}
	if got := r.metric(t, "pagewatch_ingest_syslog_messages_received_total", "transport", "tcp"); got != conns*per {
		t.Errorf("received %v", got)
	}
	if got := r.metric(t, "pagewatch_ingest_syslog_malformed_messages_total"); got != 0 {
		t.Errorf("malformed %v", got)
	}
}

func TestOversizeKeepsSync(t *testing.T) {
	cfg := testConfig()
	cfg.MaxMessageBytes = 1024
	cfg.UDPQueueBytes = 1 << 20
	r := start(t, cfg, nil)
	huge := nginx3164(strings.Repeat("x", 5000))
	ok := []string{accessLine(1), accessLine(2), accessLine(3), accessLine(4), accessLine(5), accessLine(6)}

	c := r.dialTCP(t)
	send(t, c, octet(nginx3164(ok[0]))+octet(huge)+octet(nginx3164(ok[1])))
	c = r.dialTCP(t)
	send(t, c, nginx3164(ok[2])+"\n"+huge+"\n"+nginx3164(ok[3])+"\n")
	// The too-long frame arrives in pieces, as it would from a slow peer.
	c = r.dialTCP(t)
	for i := 0; i < len(huge); i += 700 {
		send(t, c, huge[i:min(i+700, len(huge))])
		time.Sleep(time.Millisecond)
	}
	send(t, c, "\n"+nginx3164(ok[4])+"\n")
	u := r.dialUDP(t)
	send(t, u, huge)
	send(t, u, nginx3164(ok[5]))

	testcheck.Eventually(t, patience, "delivery", func() bool { return r.sink.len() == len(ok) })
	testcheck.Eventually(t, patience, "four too-long messages counted", func() bool { return r.malformed(t, syslog.ReasonTooLong) == 4 })
	wantContents(t, r.sink, ok)
}

func TestDisconnectMidFrame(t *testing.T) {
	r := start(t, testConfig(), nil)
	msg := nginx3164(accessLine(1))
	for _, partial := range []string{
		octet(msg) + octet(msg)[:40],
		octet(msg) + "12",
		msg + "\n" + msg[:40],
	} {
		c := r.dialTCP(t)
		send(t, c, partial)
		c.Close()
	}
	testcheck.Eventually(t, patience, "truncated frames", func() bool { return r.malformed(t, syslog.ReasonTruncated) == 3 })
	testcheck.Eventually(t, patience, "connections closed", func() bool { return r.metric(t, "pagewatch_ingest_syslog_tcp_connections") == 0 })
	if r.sink.len() != 3 {
		t.Fatalf("%d delivered, want the 3 whole frames", r.sink.len())
	}
	c := r.dialTCP(t)
	send(t, c, octet(msg))
	testcheck.Eventually(t, patience, "a later connection", func() bool { return r.sink.len() == 4 })
}

// Junk from port scanners, TLS clients and broken senders is counted and
// skipped; the listener carries on.
func TestHostileInput(t *testing.T) {
	r := start(t, testConfig(), nil)
	tlsHello := "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\x8f\x1a\x00\x00\x20\xc0\x2b\xc0\x2f\n"
	u := r.dialUDP(t)
	for _, d := range []string{"", "\x00", "\xff\xfe\xfd", tlsHello, "<999>x", "<13>1 garbage", "<13>Nov 99 10:00:00 h t: x",
		"<13>1 2024-11-22T10:00:00Z h a p m [unterminated x=\"", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"} {
		send(t, u, d)
	}
	for _, stream := range []string{tlsHello, "GET / HTTP/1.0\r\n\r\n", "\x00\x00\x00\n\n\n", "<13>" + strings.Repeat("\xff", 3000) + "\n"} {
		c := r.dialTCP(t)
		send(t, c, stream)
		c.Close()
	}
	// A bad octet count loses the frame boundaries: the connection is closed.
	c := r.dialTCP(t)
	send(t, c, "12x <13>hello")
	readBy(t, c, time.Now().Add(5*time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("connection with a bad octet count: read %v, want EOF", err)
	}
	testcheck.Eventually(t, patience, "a framing error counted", func() bool { return r.malformed(t, syslog.ReasonFraming) == 1 })

	good := nginx3164(junkLine)
	send(t, u, good)
	c = r.dialTCP(t)
	send(t, c, good+"\n")
	testcheck.Eventually(t, patience, "good messages after junk", func() bool { return r.sink.len() >= 2 })
	testcheck.Eventually(t, patience, "every message accounted for", func() bool {
		received := r.metric(t, "pagewatch_ingest_syslog_messages_received_total")
		return received > 2 && received == r.metric(t, "pagewatch_ingest_syslog_messages_delivered_total")+
			r.metric(t, "pagewatch_ingest_syslog_malformed_messages_total")
	})
	for _, m := range r.sink.all() {
		if string(m.Content) != junkLine && !bytes.HasPrefix(m.Content, []byte("\xff")) {
			t.Errorf("unexpected delivery: %q", m.Content)
		}
	}
}

func TestTagsFilter(t *testing.T) {
	cfg := testConfig()
	cfg.Tags = []string{"nginx"}
	r := start(t, cfg, nil)
	u := r.dialUDP(t)
	send(t, u, "<190>Nov 22 10:00:00 web1 sshd[12]: Accepted publickey")
	send(t, u, "<190>Nov 22 10:00:00 web1 nginx: "+accessLine(1))
	send(t, u, "<190>1 - web1 nginx - - - "+accessLine(2))
	send(t, u, "<190>1 - web1 - - - - untagged")
	testcheck.Eventually(t, patience, "delivery", func() bool { return r.sink.len() == 2 })
	testcheck.Eventually(t, patience, "two messages filtered", func() bool { return r.metric(t, "pagewatch_ingest_syslog_filtered_messages_total") == 2 })
}

// A handler that cannot keep up makes UDP drop, counted, once the queue is
// full; what was queued is still delivered.
func TestUDPQueueFullDrops(t *testing.T) {
	cfg := testConfig()
	cfg.MaxMessageBytes = 1024
	// Seven small datagrams (each costs its 512-byte buffer and 64), the
	// one in the handler included.
	cfg.UDPQueueBytes = 4096
	s := &sink{block: make(chan struct{}), entered: make(chan struct{}, 1)}
	r := start(t, cfg, s)
	u := r.dialUDP(t)
	msg := []byte(nginx3164("x"))
	send(t, u, string(msg))
	<-s.entered
	for range 49 {
		send(t, u, string(msg))
		time.Sleep(200 * time.Microsecond)
	}
	testcheck.Eventually(t, patience, "all received", func() bool { return r.metric(t, "pagewatch_ingest_syslog_messages_received_total") == 50 })
	if got := r.metric(t, "pagewatch_ingest_syslog_dropped_messages_total"); got != 43 {
		t.Errorf("dropped %v, want 43 (50, less 1 in the handler and 6 queued)", got)
	}
	close(s.block)
	testcheck.Eventually(t, patience, "queued delivered", func() bool { return r.sink.len() == 7 })
}

// send writes s to w, failing the test if it cannot.
func send(t *testing.T, w io.Writer, s string) {
	t.Helper()
	if _, err := io.WriteString(w, s); err != nil {
		t.Fatalf("send: %v", err)
	}
}

// readBy sets c's read deadline, failing the test if it cannot.
func readBy(t *testing.T, c net.Conn, at time.Time) {
	t.Helper()
	if err := c.SetReadDeadline(at); err != nil {
		t.Fatalf("read deadline: %v", err)
	}
}
