package clickhouse

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/chcluster"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
)

// openMigrated opens a client of a fresh 18.16 server, schema applied.
func openMigrated(t *testing.T) (*Client, *clickhousetest.Server) {
	t.Helper()
	srv := clickhousetest.Start(t)
	cfg := DefaultConfig()
	cfg.Addr = []string{srv.Addr}
	cfg.Database = "pw_test"
	return openMigratedWith(t, cfg), srv
}

// daysOfHits is 10 hits of one page on each of the days before last,
// last included, at noon UTC; batch seq is the day's offset.
func daysOfHits(last time.Time, days int) []hit.Batch {
	var out []hit.Batch
	for d := 0; d < days; d++ {
		noon := time.Date(last.Year(), last.Month(), last.Day()-d, 12, 0, 0, 0, time.UTC)
		b := hit.Batch{Seq: uint64(d + 1)}
		for i := 0; i < 10; i++ {
			b.Hits = append(b.Hits, hit.Hit{Time: noon.Add(time.Duration(i) * time.Minute), Site: "example.com", Path: "/p", Status: 200, Offset: uint64(i)})
		}
		out = append(out, b)
	}
	return out
}

func TestDropHitsBefore(t *testing.T) {
	c, srv := openMigrated(t)
	ctx := context.Background()
	last := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC) // across February's end
	if err := c.Hits().InsertHits(ctx, daysOfHits(last, 5)); err != nil {
		t.Fatal(err)
	}
	minutesBefore := srv.Query(t, "SELECT count(), sum(hits) FROM pw_test.page_minutes")

	// Any time of 28 February keeps 28 February and later.
	dropped, err := c.Hits().DropHitsBefore(ctx, time.Date(2024, 2, 28, 23, 59, 0, 0, time.UTC))
	if want := []string{"20240226", "20240227"}; err != nil || !slices.Equal(dropped, want) {
		t.Fatalf("dropped %v, %v; want %v", dropped, err, want)
	}
	if n, err := c.Hits().HitCount(ctx); err != nil || n != 30 {
		t.Fatalf("HitCount = %d, %v; want 30", n, err)
	}
	if got := srv.Query(t, "SELECT min(ts) FROM pw_test.hits"); got != "2024-02-28 12:00:00\n" {
		t.Fatalf("oldest hit left: %q", got)
	}
	// The per-minute counts are kept whole: all-time rules read them.
	if got := srv.Query(t, "SELECT count(), sum(hits) FROM pw_test.page_minutes"); got != minutesBefore || got != "50\t50\n" {
		t.Fatalf("page_minutes changed: %q, was %q", got, minutesBefore)
	}
	if n, err := c.Hits().PageCount(ctx, "example.com", "/p", time.Time{}); err != nil || n != 50 {
		t.Fatalf("all-time PageCount = %d, %v; want 50", n, err)
	}

	// Nothing older is left: a second run drops nothing.
	if dropped, err := c.Hits().DropHitsBefore(ctx, time.Date(2024, 2, 28, 0, 0, 0, 0, time.UTC)); err != nil || len(dropped) != 0 {
		t.Fatalf("second run dropped %v, %v", dropped, err)
	}
}

// Several loaders run retention. One that lists a partition another has
// just dropped then drops it again: on 18.16 that succeeds and changes
// nothing, which is what makes concurrent runs safe.
func TestDropHitsBeforeTwice(t *testing.T) {
	c, _ := openMigrated(t)
	ctx := context.Background()
	last := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	if err := c.Hits().InsertHits(ctx, daysOfHits(last, 4)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"20240227", "20240227", "19990101"} {
		if err := c.conn.Exec(ctx, alterDropHitsPartition, id); err != nil {
			t.Fatalf("drop partition %s: %v", id, err)
		}
	}
	if n, err := c.Hits().HitCount(ctx); err != nil || n != 30 {
		t.Fatalf("HitCount = %d, %v; want 30", n, err)
	}

	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = c.Hits().DropHitsBefore(ctx, last)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("concurrent run %d: %v", i, err)
		}
	}
	if n, err := c.Hits().HitCount(ctx); err != nil || n != 10 {
		t.Fatalf("HitCount = %d, %v; want 10 (1 March only)", n, err)
	}
}

func TestDropHitsBeforeRefusesOddPartitionIDs(t *testing.T) {
	if !partitionIDRE.MatchString("20240101") {
		t.Fatal("a YYYYMMDD id is refused")
	}
	for _, id := range []string{"", "2024010", "202401011", "all", "20240101'"} {
		if partitionIDRE.MatchString(id) {
			t.Errorf("%q accepted", id)
		}
	}
}

// TestClusterDropHitsBeforeOnReplicas: on 2 shards × 2 replicas the old
// day goes from every replica (ON CLUSTER runs it on one replica per
// shard; replication drops it on the other) and the kept day stays.
func TestClusterDropHitsBeforeOnReplicas(t *testing.T) {
	c := chcluster.Start(t, chcluster.Options{})
	cl := openCluster(t, c)
	ctx := context.Background()
	if _, err := cl.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2024, 3, 10, 12, 0, 0, 0, time.UTC)
	if err := cl.Hits().InsertHits(ctx, clusterBatches(base)); err != nil { // 100 hits on each of two days
		t.Fatal(err)
	}
	replicasAgree(t, c, "SELECT count() FROM pagewatch.hits_local")
	dropped, err := cl.Hits().DropHitsBefore(ctx, base)
	if err != nil || fmt.Sprint(dropped) != "[20240309]" {
		t.Fatalf("DropHitsBefore = %v, %v; want [20240309]", dropped, err)
	}
	testcheck.Eventually(t, 30*time.Second, "the day dropped on every replica", func() error {
		for i, n := range c.Nodes {
			if got := nodeCount(t, n, "SELECT groupUniqArray(toYYYYMMDD(ts)) FROM pagewatch.hits_local"); got != "[20240310]" {
				return fmt.Errorf("node %d holds the days %s", i, got)
			}
		}
		return nil
	})
	if n, err := cl.Hits().HitCount(ctx); err != nil || n != 100 {
		t.Fatalf("HitCount = %d, %v; want 100", n, err)
	}
}
