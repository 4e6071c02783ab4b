package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/chcluster"
	"github.com/pagewatch/pagewatch/pipeline/retention"
)

// The loader on a replicated ClickHouse cluster (2 shards × 2 replicas on
// ZooKeeper, cluster mode): real traffic published to JetStream, two
// loaders, one outage in the middle of the load, and then exact counts
// with nothing doubled: distinct event ids = rows (FINAL) = lines
// published, each page's per-minute counts as published, and both
// replicas of each shard holding the same rows.

// clusterLoadHits is each test's traffic: enough for several inserts
// before and after the outage, small enough to keep the tests short.
const clusterLoadHits = 60_000

// clusterLoad is one test's cluster, daemons and traffic.
type clusterLoad struct {
	c      *chcluster.Cluster
	b      *bundle
	tr     *traffic
	prog   *loadProgress
	total  int64 // messages
	addrs  []string
	procs  []*proc
	pages  chan pageCounts
	errs   chan error
	cancel context.CancelFunc
}

// startClusterLoad starts the cluster and two loaders (with rules, the
// sweeper too), and publishes the first half of the traffic; release
// lets the rest go.
func startClusterLoad(t *testing.T, rules string) *clusterLoad {
	t.Helper()
	c := chcluster.Start(t, chcluster.Options{})
	l := &clusterLoad{c: c, pages: make(chan pageCounts, 1), errs: make(chan error, 1)}
	load := bigLoad
	load.RetryMax = "2s" // back within 2 s of the outage's end
	l.b = setupWith(t, setupOptions{rules: rules, load: load, worker: defaultWorker, chCluster: c})
	// Retention on, with nothing old enough to drop: each loader runs it
	// at start, and of two loaders in one period only one may.
	cfg, err := os.ReadFile(l.b.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg = bytes.Replace(cfg, []byte("retention: {raw_hits_days: 0}"), []byte("retention: {raw_hits_days: 3650, every: 1h}"), 1)
	if err := os.WriteFile(l.b.config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	l.tr = newTraffic(t, clusterLoadHits, 2, time.Hour)
	if _, err := l.tr.messages(func(int, int, []byte) error { l.total++; return nil }); err != nil {
		t.Fatal(err)
	}
	l.prog = &loadProgress{bb: l.b.hitsBus(t)}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	t.Cleanup(cancel)
	go l.prog.watch(ctx)
	for i := 0; i < 2; i++ {
		p := l.b.start(t, "ingest", "load")
		l.procs, l.addrs = append(l.procs, p), append(l.addrs, p.adminAddr(t))
	}
	l.prog.release.Store(l.total / 2)
	go func() {
		pages, err := l.prog.publish(ctx, l.tr, 0)
		l.pages <- pages
		l.errs <- err
	}()
	t.Logf("%d hits in %d messages; the first half released", clusterLoadHits, l.total)
	return l
}

// waitLoaded waits until at least n messages are loaded.
func (l *clusterLoad) waitLoaded(t *testing.T, n int64, within time.Duration) {
	t.Helper()
	testcheck.Eventually(t, within, fmt.Sprintf("%d of %d messages loaded", n, l.total), func() error {
		if got := l.prog.done.Load(); got < n {
			return fmt.Errorf("%d loaded", got)
		}
		return nil
	})
}

func (l *clusterLoad) insertErrors(t *testing.T) (n float64) {
	for _, a := range l.addrs {
		n += metric(t, a, "pagewatch_ingest_load_insert_errors_total")
	}
	return n
}

// meetOutage keeps a few messages coming until a loader's insert has
// failed (the outage was met) and at least d has passed since began.
func (l *clusterLoad) meetOutage(t *testing.T, before float64, began time.Time, d time.Duration) {
	t.Helper()
	testcheck.Eventually(t, d+30*time.Second, "a loader's insert to fail during the outage", func() error {
		if r := l.prog.release.Load(); l.prog.done.Load() >= r && r < l.total {
			l.prog.release.Store(min(r+5, l.total))
		}
		if l.insertErrors(t) == before {
			return fmt.Errorf("no insert failed yet (%d of %d messages loaded)", l.prog.done.Load(), l.total)
		}
		if time.Since(began) < d {
			return fmt.Errorf("down for %s of %s", time.Since(began).Round(time.Second), d)
		}
		return nil
	})
}

// finish releases the rest, waits until everything is loaded, checks
// the counts and returns each page's published hits.
func (l *clusterLoad) finish(t *testing.T) pageCounts {
	t.Helper()
	l.prog.release.Store(l.total)
	pages := <-l.pages
	if err := <-l.errs; err != nil {
		t.Fatal(err)
	}
	l.prog.waitDrained(t, 2*time.Minute)
	l.checkCounts(t, pages)
	l.b.checkNoDeadLetters(t, l.prog.bb, l.procs)
	t.Logf("%v failed inserts retried", l.insertErrors(t))
	l.checkRetentionClaims(t)
	return pages
}

// checkRetentionClaims requires the two loaders' runs at start to have
// been done once per period: every run either claimed its period (a key
// in the claims bucket) or found it claimed by the other.
func (l *clusterLoad) checkRetentionClaims(t *testing.T) {
	t.Helper()
	kv, err := l.prog.bb.KV(context.Background(), bus.BucketRetention, retention.ClaimsTTL)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.ListKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	claimed := 0
	for range keys.Keys() {
		claimed++
	}
	elsewhere := 0.0
	for _, a := range l.addrs {
		elsewhere += metric(t, a, "pagewatch_retention_claimed_elsewhere_total")
	}
	if claimed < 1 || float64(claimed)+elsewhere != float64(len(l.addrs)) {
		t.Errorf("retention: %d periods claimed and %v runs found theirs claimed, for %d loaders' runs at start", claimed, elsewhere, len(l.addrs))
	}
	t.Logf("retention: %d period claimed, %v loader found it claimed", claimed, elsewhere)
}

// checkCounts requires exact counts through the Distributed tables and
// equal rows on both replicas of each shard.
func (l *clusterLoad) checkCounts(t *testing.T, pages pageCounts) {
	t.Helper()
	n := l.tr.n
	// Every replica holds its shard's rows; until then a Distributed
	// read may take one that is still fetching.
	var perShard []string
	testcheck.Eventually(t, time.Minute, "both replicas of each shard to hold the same hits", func() error {
		perShard = perShard[:0]
		for s := 1; s <= 2; s++ {
			var got []string
			for _, i := range l.c.ShardNodes(s) {
				nd := l.c.Nodes[i]
				got = append(got, strings.TrimSpace(nd.Query(t, "SELECT count() FROM pagewatch.hits_local FINAL"))+
					" "+strings.TrimSpace(nd.Query(t, "SELECT sum(hits) FROM pagewatch.page_minutes_local FINAL")))
			}
			if got[0] != got[1] {
				return fmt.Errorf("shard %d's replicas hold %q and %q (hits, per-minute sum)", s, got[0], got[1])
			}
			perShard = append(perShard, got[0])
		}
		return nil
	})
	distinct := l.b.count(t, "SELECT count() FROM (SELECT seq, line_offset FROM pagewatch.hits GROUP BY seq, line_offset)")
	final := l.b.count(t, "SELECT count() FROM pagewatch.hits FINAL")
	minutes := l.b.count(t, "SELECT sum(hits) FROM pagewatch.page_minutes FINAL")
	if distinct != n || final != n || minutes != n {
		t.Errorf("distinct event ids %d, rows %d (FINAL), per-minute sum %d; want %d each", distinct, final, minutes, n)
	}
	got := l.b.pageCounts(t)
	bad := 0
	for p, want := range pages.all {
		if got[p] != want {
			if bad++; bad <= 5 {
				t.Errorf("page %q: %d hits in page_minutes, %d published", p, got[p], want)
			}
		}
	}
	if len(got) != len(pages.all) {
		t.Errorf("page_minutes holds %d pages, %d were published", len(got), len(pages.all))
	}
	t.Logf("%d hits, each once: shards hold (hits, per-minute sum) %v on both replicas", n, perShard)
}

// clusterMilestone is the sweeper's rule in the replica test: every
// 500 views of every page, all time, each a crossing of its own.
const clusterMilestone = 500

// TestClusterReplicaKilledMidLoad SIGKILLs one replica of shard 1 while
// two loaders load and the sweeper sweeps every second: the Distributed
// inserts go to its twin, and once restarted it fetches what it missed.
// The sweeper, reading through the Distributed tables whatever replica
// they take, records each milestone the final counts passed exactly
// once.
func TestClusterReplicaKilledMidLoad(t *testing.T) {
	var thresholds []int
	for v := clusterMilestone; v < clusterLoadHits; v += clusterMilestone {
		thresholds = append(thresholds, v)
	}
	list := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(thresholds)), ", "), "[]")
	rule := fmt.Sprintf(`    - {name: every-%d, site: example.com, match: {glob: "/**"}, threshold: [%s], window: all, storm_guard: {max_individual: 10000}, notify: {recipients: [ops@example.com]}}`, clusterMilestone, list)
	l := startClusterLoad(t, rule)
	sweeper := l.b.start(t, "sweeper", "run")
	l.waitLoaded(t, l.total/4, 2*time.Minute)
	killed := l.c.ShardNodes(1)[1] // not node 0, which the test reads through
	l.c.Kill(killed)
	began := time.Now()
	l.prog.release.Store(l.total * 3 / 4)
	l.waitLoaded(t, l.total*3/4, 2*time.Minute) // loading goes on without it
	behind := strings.TrimSpace(l.c.Nodes[l.c.ShardNodes(1)[0]].Query(t, "SELECT count() FROM pagewatch.hits_local"))
	l.c.Restart(t, killed)
	t.Logf("replica s1r2 down for %s while %d of %d messages were loaded; its twin then held %s hits rows",
		time.Since(began).Round(time.Millisecond), l.total*3/4-l.total/4, l.total, behind)
	pages := l.finish(t)

	want := 0
	for _, n := range pages.all {
		for _, m := range thresholds {
			if n > m {
				want++
			}
		}
	}
	testcheck.Eventually(t, time.Minute, fmt.Sprintf("%d crossings in the history", want), func() error {
		got := l.b.count(t, "SELECT count() FROM pagewatch.crossings FINAL")
		if got > want {
			t.Fatalf("the crossings history holds %d crossings, more than the %d milestones passed", got, want)
		}
		if got != want {
			return fmt.Errorf("%d crossings", got)
		}
		return nil
	})
	alive(t, sweeper)
	t.Logf("the sweeper recorded %d crossings (every %d views, up to %d), each once", want, clusterMilestone, thresholds[len(thresholds)-1])
}

// TestClusterShardDownMidLoad stops both replicas of shard 2 for 30 s:
// every insert touches both shards, so the loaders' inserts fail until
// it is back, and they wait and retry.
func TestClusterShardDownMidLoad(t *testing.T) {
	const outage = 30 * time.Second
	l := startClusterLoad(t, "    []")
	l.waitLoaded(t, l.total/4, 2*time.Minute)
	shard2 := l.c.ShardNodes(2)
	before := l.insertErrors(t)
	l.c.Kill(shard2...)
	began := time.Now()
	l.meetOutage(t, before, began, outage)
	stalled := l.prog.done.Load()
	l.c.Restart(t, shard2...)
	t.Logf("shard 2 down for %s with %d of %d messages loaded", time.Since(began).Round(time.Millisecond), stalled, l.total)
	l.finish(t)
}

// TestClusterZooKeeperRestartedMidLoad restarts ZooKeeper: the
// replicated tables are read-only until their sessions are back, and the
// loaders retry.
func TestClusterZooKeeperRestartedMidLoad(t *testing.T) {
	l := startClusterLoad(t, "    []")
	l.waitLoaded(t, l.total/4, 2*time.Minute)
	before := l.insertErrors(t)
	l.c.ZooKeeper.Kill()
	began := time.Now()
	l.meetOutage(t, before, began, 2*time.Second)
	if err := l.c.ZooKeeper.Launch(); err != nil {
		t.Fatal(err)
	}
	t.Logf("ZooKeeper down for %s with %d of %d messages loaded", time.Since(began).Round(time.Millisecond), l.prog.done.Load(), l.total)
	l.finish(t)
}
