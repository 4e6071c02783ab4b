package admin_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

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
