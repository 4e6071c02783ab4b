package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/testcheck"
)

// once: distinct hits, per-minute counts and every page's count.
func TestThreeLoadersKilled20Times(t *testing.T) {
	const (
		hits    = 2_000_000
		kills   = 20
		loaders = 3
	)
	b := setupLoad(t, "    []", bigLoad)
	tr := newTraffic(t, hits, 4, 4*time.Hour)
	totalMsgs := int64(0)
	if _, err := tr.messages(func(int, int, []byte) error { totalMsgs++; return nil }); err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 4))
	t.Logf("%d hits in %d messages over %d subjects, %s to %s; kill seed %d",
		hits, totalMsgs, tr.files, tr.base.Format(time.DateTime), tr.base.Add(tr.span).Format(time.DateTime), seed)

	prog := &loadProgress{bb: b.hitsBus(t)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go prog.watch(ctx)
	procs := make([]*proc, loaders)
	for i := range procs {
		procs[i] = b.start(t, "ingest", "load")
	}

	began := time.Now()
	type result struct {
		pages pageCounts
		err   error
		took  time.Duration
	}
	published := make(chan result, 1)
	go func() {
		// At most about 300,000 hits ahead of the loaders: publishing goes
		// on through most of the kills, as live traffic would.
		pages, err := prog.publish(ctx, tr, 120)
		published <- result{pages, err, time.Since(began)}
	}()

	// Kill k happens once about k/(kills+1) of the messages are loaded, a
	// random moment later, so the kills spread over the whole load.
	loadBy := time.Now().Add(3 * time.Minute) // the whole load, kills included
	killedDuringPublish, duringInsert := 0, 0
	for k := 1; k <= kills; k++ {
		at := totalMsgs * int64(k) / (kills + 1)
		testcheck.Eventually(t, time.Until(loadBy), fmt.Sprintf("kill %d: %d of %d messages loaded", k, at, totalMsgs), func() error {
			if n := prog.done.Load(); n < at {
				return fmt.Errorf("loading stalled at %d of %d messages", n, totalMsgs)
			}
			return nil
		})
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
		// Every other kill waits for an insert to be under way, so some
		// loaders die with a batch in ClickHouse and not acknowledged.
		if k%2 == 0 && b.waitInsert(t, 2*time.Second) {
			duringInsert++
		}
		if prog.published.Load() < totalMsgs {
			killedDuringPublish++
		}
		i := rng.IntN(loaders)
		procs[i].kill()
		procs[i] = b.start(t, "ingest", "load")
	}
	res := <-published
	if res.err != nil {
		t.Fatal(res.err)
	}
	prog.waitDrained(t, 2*time.Minute)
	loaded := time.Since(began)

	rows := b.checkCounts(t, tr, res.pages)
	b.checkNoDeadLetters(t, prog.bb, procs)
	t.Logf("%d hits published in %s; %d loaders SIGKILLed %d times (%d while publishing, %d while an insert ran); all loaded in %s; %d distinct hits, %s (%.2f%% loaded twice)",
		hits, res.took.Round(time.Millisecond), loaders, kills, killedDuringPublish, duringInsert, loaded.Round(time.Millisecond), hits, rows, 100*float64(rows.inserted-hits)/hits)
}

// TestClickHouseKilledMidLoad SIGKILLs clickhouse-server while two loaders
// load 500,000 hits (while an insert runs, if one starts within 2 s), keeps
// it down until a loader's insert has failed and at least 2 s have passed,
// restarts it on the same data and ports, does that twice, and requires
// exact counts, both loaders still running, and nothing dead-lettered.
//
// The traffic is released in thirds, the next third after each outage:
// loaders are fast enough to finish everything published between two
// outages, and an outage with nothing left to insert tests nothing.
func TestClickHouseKilledMidLoad(t *testing.T) {
	const (
		hits    = 500_000
		loaders = 2
		outages = 2
	)
	b := setupLoad(t, "    []", bigLoad)
	tr := newTraffic(t, hits, 2, time.Hour)
	totalMsgs := int64(0)
	if _, err := tr.messages(func(int, int, []byte) error { totalMsgs++; return nil }); err != nil {
		t.Fatal(err)
	}
	prog := &loadProgress{bb: b.hitsBus(t)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go prog.watch(ctx)
	procs := make([]*proc, loaders)
	addrs := make([]string, loaders)
	for i := range procs {
		procs[i] = b.start(t, "ingest", "load")
		addrs[i] = procs[i].adminAddr(t)
	}
	insertErrors := func() (n float64) {
		for _, a := range addrs {
			n += metric(t, a, "pagewatch_ingest_load_insert_errors_total")
		}
		return n
	}

	began := time.Now()
	type result struct {
		pages pageCounts
		err   error
	}
	published := make(chan result, 1)
	chunk := totalMsgs / (outages + 1)
	prog.release.Store(chunk)
	go func() {
		pages, err := prog.publish(ctx, tr, 0)
		published <- result{pages, err}
	}()

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 5))
	t.Logf("%d hits in %d messages over %d subjects; outage seed %d", hits, totalMsgs, tr.files, seed)
	loadBy := time.Now().Add(2 * time.Minute) // up to the last outage
	var down time.Duration
	for o := 1; o <= outages; o++ {
		// Outage o starts with its third between 40% and 90% loaded.
		at := chunk*int64(o-1) + chunk*int64(40+rng.IntN(51))/100
		testcheck.Eventually(t, time.Until(loadBy), fmt.Sprintf("outage %d: %d of %d messages loaded", o, at, totalMsgs), func() error {
			if n := prog.done.Load(); n < at {
				return fmt.Errorf("loading stalled at %d of %d messages", n, totalMsgs)
			}
			return nil
		})
		midInsert := b.waitInsert(t, 2*time.Second)
		before, loadedAt := insertErrors(), prog.done.Load()
		killedAt := time.Now()
		b.ch.Kill()
		// Down for at least 2 s, and until an insert has failed, so a
		// loader certainly met the outage; if the loaders had already
		// loaded all that was released, a few more messages give them
		// an insert to fail.
		testcheck.Eventually(t, time.Until(killedAt.Add(30*time.Second)), fmt.Sprintf("outage %d: 2 s down and a loader's insert failed", o), func() error {
			if r := prog.release.Load(); prog.done.Load() >= r && r < totalMsgs {
				prog.release.Store(min(r+5, totalMsgs))
			}
			if time.Since(killedAt) < 2*time.Second || insertErrors() == before {
				return fmt.Errorf("no loader tried to insert in 30 s (%d of %d messages loaded)", prog.done.Load(), totalMsgs)
			}
			return nil
		})
		b.ch.Restart(t)
		prog.release.Store(max(prog.release.Load(), min(chunk*int64(o+1), totalMsgs)))
		if o == outages {
			prog.release.Store(totalMsgs)
		}
		down += time.Since(killedAt)
		t.Logf("outage %d: clickhouse-server SIGKILLed with %d of %d messages loaded (during an insert: %v), back after %s",
			o, loadedAt, totalMsgs, midInsert, time.Since(killedAt).Round(time.Millisecond))
	}
	res := <-published
	if res.err != nil {
		t.Fatal(res.err)
	}
	prog.waitDrained(t, 2*time.Minute)
	loaded := time.Since(began)

	rows := b.checkCounts(t, tr, res.pages)
	b.checkNoDeadLetters(t, prog.bb, procs)
	var redeliveries, fetchErrors float64
	for _, a := range addrs {
		redeliveries += metric(t, a, "pagewatch_ingest_load_redeliveries_total")
		fetchErrors += metric(t, a, "pagewatch_ingest_load_fetch_errors_total")
	}
	t.Logf("%d hits in %d messages loaded by %d loaders in %s with %d ClickHouse outages (%s down in all): %v failed inserts retried, %v redeliveries, %v fetch errors; %d distinct hits, %s",
		hits, totalMsgs, loaders, loaded.Round(time.Millisecond), outages, down.Round(time.Millisecond), insertErrors(), redeliveries, fetchErrors, hits, rows)
}

// waitInsert waits up to timeout for ClickHouse to be running an insert,
// and reports whether it is.
func (b *bundle) waitInsert(t *testing.T, timeout time.Duration) bool {
	t.Helper()
	return testcheck.Poll(timeout, func() bool {
		return b.count(t, "SELECT count() FROM system.processes WHERE query LIKE 'INSERT%'") > 0
	})
}
