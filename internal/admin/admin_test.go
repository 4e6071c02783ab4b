package admin_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/internal/admin"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestEndpoints(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "pagewatch_test_things_total", Help: "Things."})
	reg.MustRegister(c)
	c.Add(3)
	var down atomic.Bool
	srv := admin.New("127.0.0.1:0", reg, map[string]admin.Check{
		"nats": func(context.Context) error {
			if down.Load() {
				return errors.New("connection refused")
			}
			return nil
		},
	}, slog.New(slog.DiscardHandler))
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	base := "http://" + srv.Addr()

	if code, body := get(t, base+"/metrics"); code != 200 || !strings.Contains(body, "pagewatch_test_things_total 3") {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Fatalf("/healthz: %d", code)
	}
	if code, body := get(t, base+"/readyz"); code != 200 || body != "nats: ok\n" {
		t.Fatalf("/readyz up: %d %q", code, body)
	}
	down.Store(true)
	if code, body := get(t, base+"/readyz"); code != 503 || !strings.Contains(body, "nats: connection refused") {
		t.Fatalf("/readyz down: %d %q", code, body)
	}
	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Fatalf("/healthz must not depend on dependencies: %d", code)
	}
	// A check that ignores its context is abandoned at the timeout; the
	// others are still reported.
	hang := make(chan struct{})
	defer close(hang)
	srv.AddCheck("stuck", func(context.Context) error { <-hang; return nil })
	down.Store(false)
	if code, body := get(t, base+"/readyz"); code != 503 || body != "nats: ok\nstuck: no answer within 2s\n" {
		t.Fatalf("/readyz with a stuck check: %d %q", code, body)
	}
}

// A client that trickles a request body does not hold a connection past
// the read timeout: the listener serves public links.
func TestTrickledBodyIsCutOff(t *testing.T) {
	srv := admin.New("127.0.0.1:0", prometheus.NewRegistry(), nil, slog.New(slog.DiscardHandler))
	if srv.ReadTimeout <= 0 || srv.IdleTimeout <= 0 {
		t.Fatalf("read timeout %s, idle timeout %s: want both set", srv.ReadTimeout, srv.IdleTimeout)
	}
	srv.ReadTimeout = 300 * time.Millisecond
	srv.Handle("POST /links/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = srv.Run(ctx) }()

	conn, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const size = 40 // bytes, one per 100 ms: 4 s if never cut off
	fmt.Fprintf(conn, "POST /links/snooze HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n", size)
	closed := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, conn); close(closed) }()
	sent := 0
	for ; sent < size; sent++ {
		select {
		case <-closed:
		case <-time.After(100 * time.Millisecond):
			if _, err := conn.Write([]byte("x")); err == nil {
				continue
			}
		}
		break
	}
	if sent == size {
		t.Fatalf("the whole trickled body (%d bytes over %s) was read: the connection was never cut off", size, size*100*time.Millisecond)
	}
}
