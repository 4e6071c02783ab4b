package ratelimit_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/ratelimit"
	"github.com/pagewatch/pagewatch/internal/testenv"
)

// BenchmarkReserve measures slots claimed per second through NATS KV (an
// embedded server, file storage, loopback): clients are processes with
// their own connection and Limiter, goroutines the reservations each has
// in flight (worker.concurrency). "same key" is the global limit, where
// every claim races every other; "own keys" is per-recipient limits, one
// key per goroutine, so there is nothing to race. The limit is far above
// the rate reached, so what is measured is the KV round trips and the
// CAS retries.
func BenchmarkReserve(b *testing.B) {
	for _, c := range []struct{ clients, goroutines int }{{1, 1}, {3, 1}, {1, 4}, {3, 4}} {
		for _, shared := range []bool{true, false} {
			keys := "own keys"
			if shared {
				keys = "same key"
			}
			b.Run(fmt.Sprintf("clients=%d/goroutines=%d/%s", c.clients, c.goroutines, keys), func(b *testing.B) {
				benchReserve(b, c.clients, c.goroutines, shared)
			})
		}
	}
}

func benchReserve(b *testing.B, clients, goroutines int, shared bool) {
	logger := testenv.Logger(b)
	_, ns := testenv.NATS(b, logger)
	l := ratelimit.Limit{Rate: 1_000_000, Per: time.Second, Burst: 1_000_000}
	var lims []*ratelimit.Limiter
	var regs []*prometheus.Registry
	for range clients {
		reg := prometheus.NewRegistry()
		lims = append(lims, ratelimit.New(bucket(b, testenv.NATSClient(b, ns.URL, logger)), logger, reg, nil))
		regs = append(regs, reg)
	}
	ctx := context.Background()
	var left atomic.Int64
	left.Store(int64(b.N))
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for c, lim := range lims {
		for g := range goroutines {
			k := ratelimit.Global()
			if !shared {
				k = ratelimit.Recipient(fmt.Sprintf("user%d-%d@example.com", c, g))
			}
			wg.Go(func() {
				for left.Add(-1) >= 0 {
					if _, err := lim.Reserve(ctx, k, l); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	var conflicts float64
	for _, reg := range regs {
		for _, name := range []string{"global", "rcpt"} {
			conflicts += metric(b, reg, "pagewatch_ratelimit_cas_conflicts_total", name)
		}
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "reservations/s")
	b.ReportMetric(conflicts/float64(b.N), "conflicts/op")
}
