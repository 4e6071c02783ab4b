package bus_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/testserver/natscluster"
)

// TestClusterDaemonsCreateTogether: daemons started together on a 3-node
// cluster create the same streams and buckets (at replicas 3) at once.
// The server leaves some of those requests unanswered until they time
// out; every daemon must still get them rather than exit.
func TestClusterDaemonsCreateTogether(t *testing.T) {
	c := natscluster.Start(t, 3, natscluster.Build(t, t.TempDir()))
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			cfg := bus.DefaultConfig()
			cfg.URL, cfg.Replicas = c.URL, 3
			b, err := bus.Connect(context.Background(), cfg, "cluster test", slog.New(slog.DiscardHandler))
			if err != nil {
				t.Error(err)
				return
			}
			defer b.Close()
			start := time.Now()
			if _, err := b.HitsStream(context.Background()); err != nil {
				t.Errorf("client %d: %v", i, err)
			}
			if _, err := b.KV(context.Background(), bus.BucketTailLeases, 15*time.Second); err != nil {
				t.Errorf("client %d: %v", i, err)
			}
			if _, err := b.KV(context.Background(), bus.BucketLocks, 15*time.Second); err != nil {
				t.Errorf("client %d: %v", i, err)
			}
			t.Logf("client %d: stream and buckets in %s", i, time.Since(start).Round(time.Millisecond))
		})
	}
	wg.Wait()
}
