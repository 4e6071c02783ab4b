package syslog_test

import (
	"context"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/pipeline/syslog"
)

func benchParse(b *testing.B, msg string) {
	p := syslog.Parser{Location: time.UTC}
	var m syslog.Message
	in := []byte(msg)
	now := time.Now()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		if err := p.Parse(in, now, &m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}

func BenchmarkParseRFC3164Nginx(b *testing.B) { benchParse(b, nginx3164(accessLine(12345))) }
func BenchmarkParseRFC5424(b *testing.B)      { benchParse(b, rsyslog5424(accessLine(12345))) }

// runCounting starts a Listener whose handler only counts, on the
// transports given.
func runCounting(b *testing.B, udp, tcp bool) (*syslog.Listener, *atomic.Int64) {
	cfg := syslog.DefaultConfig()
	cfg.Timezone = "UTC"
	if udp {
		cfg.ListenUDP = "127.0.0.1:0"
	}
	if tcp {
		cfg.ListenTCP = "127.0.0.1:0"
	}
	var n atomic.Int64
	l, err := syslog.New(cfg, func(*syslog.Message) { n.Add(1) }, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = l.Run(ctx); close(done) }() // a benchmark's listener stops when cancelled
	b.Cleanup(func() { cancel(); <-done })
	return l, &n
}

// BenchmarkUDPEndToEnd sends nginx's datagrams from one socket through the
// listener to a counting handler. The sender keeps at most a window of
// datagrams unhandled, so the figure is what is sustained without the
// kernel dropping any; lost datagrams are reported all the same.
func BenchmarkUDPEndToEnd(b *testing.B) {
	l, got := runCounting(b, true, false)
	c, err := net.Dial("udp", l.UDPAddr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	msg := []byte(nginx3164(accessLine(12345)))
	const window = 2000
	b.SetBytes(int64(len(msg)))
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		for int64(i)-got.Load() >= window {
			time.Sleep(20 * time.Microsecond)
		}
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for got.Load() < int64(b.N) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Microsecond)
	}
	elapsed := time.Since(start).Seconds()
	b.ReportMetric(float64(got.Load())/elapsed, "msgs/s")
	b.ReportMetric(float64(int64(b.N)-got.Load()), "lost")
}

// BenchmarkTCPEndToEnd sends octet-counted frames over one connection.
func BenchmarkTCPEndToEnd(b *testing.B) {
	l, got := runCounting(b, false, true)
	c, err := net.Dial("tcp", l.TCPAddr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	frame := octet(nginx3164(accessLine(12345)))
	batch := make([]byte, 0, 256*len(frame))
	for range 256 {
		batch = append(batch, frame...)
	}
	b.SetBytes(int64(len(frame)))
	b.ResetTimer()
	start := time.Now()
	for sent := 0; sent < b.N; sent += 256 {
		k := min(256, b.N-sent)
		if _, err := c.Write(batch[:k*len(frame)]); err != nil {
			b.Fatal(err)
		}
	}
	for got.Load() < int64(b.N) {
		time.Sleep(100 * time.Microsecond)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}
