package console

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// run serves b's console through Run, as the daemon does, with short
// timeouts, until the test ends.
func run(t *testing.T, b *bundle, tm timeouts) string {
	t.Helper()
	b.s.timeouts = tm
	if err := b.s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return b.s.Addr()
}

// A body trickled in a byte at a time holds a connection no longer than
// the read timeout.
func TestTrickledBodyIsCutAtTheReadTimeout(t *testing.T) {
	b := build(t, func(c *Config) { c.Listen = "127.0.0.1:0" })
	addr := run(t, b, timeouts{header: 500 * time.Millisecond, read: time.Second, write: 5 * time.Second, idle: 5 * time.Second})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /login HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 10000\r\n\r\n", addr)
	closed := make(chan time.Duration, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := conn.Read(buf); err != nil {
				closed <- time.Since(start)
				return
			}
		}
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case d := <-closed:
			if d > 3*time.Second {
				t.Errorf("closed after %s, want about the 1s read timeout", d.Round(time.Millisecond))
			}
			return
		case <-tick.C:
			if time.Since(start) > 6*time.Second {
				t.Fatal("a trickled body held the connection 6s, past the 1s read timeout")
			}
			_, _ = conn.Write([]byte("u"))
		}
	}
}

// The live stream only writes: the read and write timeouts, which bound
// a request, do not end it.
func TestLiveStreamOutlivesTheTimeouts(t *testing.T) {
	b := build(t, func(c *Config) { c.Listen, c.Auth, c.LiveInterval = "127.0.0.1:0", AuthNone, 500*time.Millisecond })
	addr := run(t, b, timeouts{header: 500 * time.Millisecond, read: time.Second, write: time.Second, idle: 5 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/v1/live/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") && time.Since(start) > 4*time.Second {
			return
		}
	}
	t.Fatalf("the stream ended after %s (%v); want it open past 4× the 1s timeouts", time.Since(start).Round(time.Millisecond), sc.Err())
}
