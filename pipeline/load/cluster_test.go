package load_test

import (
	"context"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testenv"
	"github.com/pagewatch/pagewatch/internal/testserver/natscluster"
)

// TestClusterLoaderLoadsFromAnR3Stream: the loader on a 3-node cluster,
// with the hits stream and its consumer at replicas 3, loads every hit.
func TestClusterLoaderLoadsFromAnR3Stream(t *testing.T) {
	b := setup(t)
	c := natscluster.Start(t, 3, natscluster.Build(t, t.TempDir()))
	cfg := bus.DefaultConfig()
	cfg.URL, cfg.Replicas = c.URL, 3
	cb, err := bus.Connect(context.Background(), cfg, "cluster test", testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cb.Close)
	b.bus = cb
	// A stream at replicas 3 answers its first publishes only once it
	// has a leader: on a loaded machine a publish right after its
	// creation went unanswered ("no response from stream"). The
	// tailers' publishes retry; this test's do not, so it waits.
	if _, err := cb.HitsStream(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.WaitLeaders(t, time.Minute)
	b.publish(t, 30, 100)
	stop := b.run(t, b.ch.Hits())
	defer stop()
	testcheck.Eventually(t, 30*time.Second, "3,000 hits in ClickHouse", func() bool {
		return b.chSrv.Query(t, "SELECT count() FROM pagewatch.hits") == "3000\n"
	})
}
