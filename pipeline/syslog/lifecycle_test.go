package syslog_test

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/pipeline/syslog"
)

func TestMaxTCPConnections(t *testing.T) {
	cfg := testConfig()
	cfg.MaxTCPConnections = 2
	r := start(t, cfg, nil)
	r.dialTCP(t)
	r.dialTCP(t)
	testcheck.Eventually(t, patience, "two connections", func() bool { return r.metric(t, "pagewatch_ingest_syslog_tcp_connections") == 2 })
	c := r.dialTCP(t)
	readBy(t, c, time.Now().Add(5*time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("third connection: read %v, want EOF", err)
	}
	if got := r.metric(t, "pagewatch_ingest_syslog_tcp_connections_rejected_total"); got != 1 {
		t.Fatalf("rejected %v", got)
	}
}

func TestIdleTimeout(t *testing.T) {
	cfg := testConfig()
	cfg.TCPIdleTimeout = time.Second
	r := start(t, cfg, nil)
	c := r.dialTCP(t)
	begin := time.Now()
	// Traffic keeps it open past the timeout...
	for range 4 {
		send(t, c, nginx3164("x")+"\n")
		time.Sleep(400 * time.Millisecond)
	}
	// ...silence closes it.
	readBy(t, c, time.Now().Add(5*time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("read %v, want EOF", err)
	}
	if d := time.Since(begin); d < 2*time.Second {
		t.Fatalf("closed after %v, while still sending", d)
	}
	testcheck.Eventually(t, patience, "the connections gauge back at 0", func() bool { return r.metric(t, "pagewatch_ingest_syslog_tcp_connections") == 0 })
	if r.sink.len() != 4 {
		t.Fatalf("%d delivered", r.sink.len())
	}
}

func TestShutdown(t *testing.T) {
	r := start(t, testConfig(), nil)
	udpAddr, tcpAddr := r.l.UDPAddr().String(), r.l.TCPAddr().String()
	idle := r.dialTCP(t)
	mid := r.dialTCP(t)
	send(t, mid, "300 <190>Nov 22")
	send(t, r.dialTCP(t), nginx3164("x")+"\n")
	testcheck.Eventually(t, patience, "delivery", func() bool { return r.sink.len() == 1 })
	testcheck.Eventually(t, patience, "three connections", func() bool { return r.metric(t, "pagewatch_ingest_syslog_tcp_connections") == 3 })

	if took := r.stop(); took > time.Second {
		t.Fatalf("Run took %v to return", took)
	}
	for _, c := range []net.Conn{idle, mid} {
		readBy(t, c, time.Now().Add(5*time.Second))
		if _, err := c.Read(make([]byte, 1)); !closedByServer(err) {
			t.Fatalf("open connection after shutdown: read %v, want EOF or a reset", err)
		}
	}
	if c, err := net.DialTimeout("tcp", tcpAddr, time.Second); err == nil {
		c.Close()
		t.Fatal("TCP still accepting after shutdown")
	}
	pc, err := net.ListenPacket("udp", udpAddr)
	if err != nil {
		t.Fatalf("UDP port still bound after shutdown: %v", err)
	}
	pc.Close()
	if got := r.metric(t, "pagewatch_ingest_syslog_tcp_connections"); got != 0 {
		t.Fatalf("open connections after shutdown: %v", got)
	}
}

// closedByServer says whether a read error means the listener closed the
// connection. A socket closed while bytes it was sent are still unread (the
// half frame on the connection cut mid-message) is answered with a reset, not
// a FIN: the kernel's choice, and just as closed.
func closedByServer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// Run returns once a handler blocked at shutdown returns, having delivered
// what was queued.
func TestShutdownWaitsForHandler(t *testing.T) {
	s := &sink{block: make(chan struct{}), entered: make(chan struct{}, 1)}
	r := start(t, testConfig(), s)
	u := r.dialUDP(t)
	send(t, u, nginx3164("a"))
	<-s.entered
	send(t, u, nginx3164("b"))
	testcheck.Eventually(t, patience, "two messages received", func() bool { return r.metric(t, "pagewatch_ingest_syslog_messages_received_total") == 2 })
	time.AfterFunc(200*time.Millisecond, func() { close(s.block) })
	r.stop()
	if r.sink.len() != 2 {
		t.Fatalf("%d delivered by shutdown, want 2", r.sink.len())
	}
}

func TestNew(t *testing.T) {
	noop := func(*syslog.Message) {}
	logger := slog.New(slog.DiscardHandler)
	if _, err := syslog.New(syslog.DefaultConfig(), noop, logger, prometheus.NewRegistry()); err == nil ||
		!strings.Contains(err.Error(), "listen_udp or listen_tcp") {
		t.Errorf("no address: %v", err)
	}
	r := start(t, testConfig(), nil)
	cfg := testConfig()
	cfg.ListenTCP = r.l.TCPAddr().String()
	reg := prometheus.NewRegistry()
	if _, err := syslog.New(cfg, noop, logger, reg); err == nil || !strings.Contains(err.Error(), "ingest.tail.syslog.listen_tcp") {
		t.Errorf("port in use: %v", err)
	}
	// The failed New registered nothing and left no socket bound.
	cfg.ListenTCP = ""
	l, err := syslog.New(cfg, noop, logger, reg)
	if err != nil {
		t.Fatalf("retry with the same registry: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l.TCPAddr() != nil || l.UDPAddr() == nil {
		t.Errorf("addresses: tcp %v udp %v", l.TCPAddr(), l.UDPAddr())
	}
}

func TestConfigValidate(t *testing.T) {
	if err := syslog.DefaultConfig().Validate(); err != nil || syslog.DefaultConfig().Enabled() {
		t.Fatalf("defaults: %v, enabled %v", err, syslog.DefaultConfig().Enabled())
	}
	cfg := syslog.Config{
		ListenUDP:       "5514",
		ListenTCP:       "localhost",
		MaxMessageBytes: 100,
		Tags:            []string{"nginx", "", "a b"},
		Timezone:        "Mars/Olympus",
		UDPReadBuffer:   -1,
	}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, key := range []string{"listen_udp", "listen_tcp", "max_message_bytes", "tcp_idle_timeout",
		"max_tcp_connections", "tags[1]", "tags[2]", "timezone", "udp_queue_bytes", "udp_read_buffer"} {
		if !strings.Contains(err.Error(), "ingest.tail.syslog."+key+":") {
			t.Errorf("no error names %s:\n%v", key, err)
		}
	}
}
