package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/smtptest"
)

// TestWorkersNeverSendOnePageTwiceAtOnce runs four worker processes on 400
// crossings of 20 pages with a server that takes 15 ms per message, so
// sends overlap: no two sends of one page may, and each crossing is
// mailed exactly once.
func TestWorkersNeverSendOnePageTwiceAtOnce(t *testing.T) {
	const (
		workers      = 4
		pages        = 20
		perPage      = 20
		smtpDelay    = 15 * time.Millisecond
		lockConflict = "pagewatch_worker_lock_conflicts_total"
	)
	b := setupWith(t, setupOptions{
		rules: "    []", load: defaultLoad,
		// A small prefetch spreads every page's jobs over the processes,
		// so they contend for the pages' locks.
		worker: workerConfig{Concurrency: 3, Prefetch: 16, LockTTL: "3s", DeferDelay: "100ms",
			AckWait: "10s", DrainTimeout: "5s", NoRateLimit: true},
		smtp: []smtptest.Option{smtptest.WithDelay(smtpDelay)},
	})
	c := b.jobsClient(t)
	_, addrs := b.startWorkers(t, workers)

	began := time.Now()
	jobs := map[string]crossing.Crossing{}
	// Round-robin over the pages, as crossings of busy pages arrive.
	for i := 0; i < perPage; i++ {
		for p := 0; p < pages; p++ {
			x := workerJob(p, i)
			jobs[x.Key] = x
			c.publish(t, x)
		}
	}
	mails := b.waitJobsDone(t, c, jobs, 45*time.Second)
	took := time.Since(began)

	st := checkMails(t, mails, jobs)
	if len(mails) != len(jobs) || st.duplicates != 0 {
		t.Errorf("%d mails for %d crossings, %d duplicates: want each crossing mailed exactly once", len(mails), len(jobs), st.duplicates)
	}
	ov := overlaps(mails)
	for i, o := range ov {
		if i == 10 {
			t.Errorf("... and %d more overlaps", len(ov)-10)
			break
		}
		t.Errorf("overlapping sends of one page: %s", o)
	}
	inFlight := maxInFlight(mails)
	if inFlight < 2 {
		t.Errorf("at most %d send at a time: the test did not make sends overlap", inFlight)
	}
	if n := c.ledgerSize(t); n != len(jobs) {
		t.Errorf("the sent ledger holds %d crossings, want %d", n, len(jobs))
	}
	conflicts := workerMetric(t, addrs, lockConflict)
	history := b.waitOutcome(t, "sent", len(jobs), 20*time.Second)
	t.Logf("%d workers: %d crossings over %d pages mailed in %s: %d mails, %d duplicates, %d overlapping sends of one page; up to %d sends at once; %.0f jobs deferred on a locked page; history: %s",
		workers, len(jobs), pages, took.Round(time.Millisecond), len(mails), st.duplicates, len(ov), inFlight, conflicts, history)
}

// TestWorkersKilled20Times mails 1,000 crossings over 50 pages with four
// worker processes, one of which is SIGKILLed (and restarted) at a random
// moment 20 times. Every crossing is mailed; a crossing mailed twice is
// one whose first mail the server accepted around a kill, and both copies
// carry the same Message-ID; no two sends of one page overlap, dead
// workers' leases included; and the jobs stream ends empty.
func TestWorkersKilled20Times(t *testing.T) {
	const (
		workers     = 4
		concurrency = 2
		pages       = 50
		crossings   = 1000
		kills       = 20
		smtpDelay   = 20 * time.Millisecond
		lockTTL     = 3 * time.Second
	)
	b := setupWith(t, setupOptions{
		rules: "    []", load: defaultLoad,
		// ack_wait is the least lock_ttl allows: a killed worker's
		// prefetched jobs come back after it.
		worker: workerConfig{Concurrency: concurrency, Prefetch: 16, LockTTL: lockTTL.String(), DeferDelay: "200ms",
			AckWait: (2 * lockTTL).String(), DrainTimeout: "5s", NoRateLimit: true},
		smtp: []smtptest.Option{smtptest.WithDelay(smtpDelay)},
	})
	c := b.jobsClient(t)
	procs, _ := b.startWorkers(t, workers)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 6))

	began := time.Now()
	jobs := map[string]crossing.Crossing{}
	all := make([]crossing.Crossing, 0, crossings)
	for i := 0; i < crossings; i++ {
		x := workerJob(i%pages, i/pages)
		jobs[x.Key] = x
		all = append(all, x)
	}
	// Crossings arrive over about 12 s, 20 every 250 ms, while the kills
	// happen: live traffic, not a backlog.
	published := make(chan struct{})
	stop := make(chan struct{})
	defer func() { close(stop); <-published }() // if the test fails early
	go func() {
		defer close(published)
		for off := 0; off < len(all); off += 20 {
			select {
			case <-stop:
				return
			default:
			}
			for _, x := range all[off:min(off+20, len(all))] {
				if err := c.tryPublish(x); err != nil {
					t.Error(err) // not Fatal: this is not the test's goroutine
					return
				}
			}
			time.Sleep(250 * time.Millisecond)
		}
	}()

	killTimes := make([]time.Time, 0, kills)
	for k := 0; k < kills; k++ {
		time.Sleep(200*time.Millisecond + time.Duration(rng.IntN(800))*time.Millisecond)
		i := rng.IntN(workers)
		killTimes = append(killTimes, time.Now())
		procs[i].kill()
		procs[i] = b.start(t, "worker", "run")
	}
	killing := time.Since(began)
	<-published
	mails := b.waitJobsDone(t, c, jobs, 45*time.Second)
	took := time.Since(began)

	st := checkMails(t, mails, jobs)
	if len(st.missing) > 0 {
		t.Errorf("%d crossings never mailed", len(st.missing))
	}
	// A second mail of a crossing is allowed only when a worker died
	// after the server accepted the first and before it wrote the sent
	// ledger: the first copy was accepted just before a kill, or just
	// after (the server finishing a dead worker's DATA).
	first := map[string]received{}
	for _, r := range mails {
		if f, ok := first[r.key]; !ok || r.accepted.Before(f.accepted) {
			first[r.key] = r
		}
	}
	dupCrossings := 0
	// Earliest and latest acceptance of a first copy, relative to its kill.
	var offsets []time.Duration
	for key, n := range st.copies {
		if n == 1 {
			continue
		}
		dupCrossings++
		acc := first[key].accepted
		// The kill nearest the acceptance.
		off := time.Duration(1<<63 - 1)
		for _, k := range killTimes {
			if d := acc.Sub(k); d.Abs() < off.Abs() {
				off = d
			}
		}
		offsets = append(offsets, off)
		// Accepted up to a second before the kill (the worker had the
		// reply, not yet the ledger entry) or shortly after it (the
		// server finishing the dead worker's DATA).
		if off < -time.Second || off > smtpDelay+500*time.Millisecond {
			t.Errorf("crossing %s mailed %d times; its first mail was accepted at %s, %s from the nearest kill",
				key, n, acc.Format("15:04:05.000"), off)
		}
	}
	if st.duplicates > kills*concurrency {
		t.Errorf("%d duplicates from %d kills of workers running %d sends each", st.duplicates, kills, concurrency)
	}
	ov := overlaps(mails)
	for i, o := range ov {
		if i == 10 {
			t.Errorf("... and %d more overlaps", len(ov)-10)
			break
		}
		t.Errorf("overlapping sends of one page: %s", o)
	}
	if n := c.pending(t); n != 0 {
		t.Errorf("%d jobs left in the stream", n)
	}
	if n := c.ledgerSize(t); n != crossings {
		t.Errorf("the sent ledger holds %d crossings, want %d", n, crossings)
	}
	window := "none"
	if len(offsets) > 0 {
		window = fmt.Sprintf("%s to %s", slices.Min(offsets).Round(time.Millisecond), slices.Max(offsets).Round(time.Millisecond))
	}
	t.Logf("%d crossings over %d pages, %d workers (seed %d): %d SIGKILLs in %s; %d emails, %d duplicates (same Message-ID, %d crossings; first copies accepted %s from the nearest kill), %d overlapping sends of one page, up to %d sends at once; all done in %s, jobs stream empty, sent ledger complete",
		crossings, pages, workers, seed, len(killTimes), killing.Round(time.Millisecond), len(mails), st.duplicates, dupCrossings,
		window, len(ov), maxInFlight(mails), took.Round(time.Millisecond))
}

// TestKilledWorkersLockLapses SIGKILLs a worker in the middle of a send,
// while another worker holds jobs of the same page and is deferring them:
// the survivor sends them once the dead worker's lease has lapsed, within
// about lock_ttl of the kill, and not a moment before the lease ran out.
func TestKilledWorkersLockLapses(t *testing.T) {
	const (
		lockTTL    = 3 * time.Second
		deferDelay = 200 * time.Millisecond
		// Long enough to kill the holder mid-send, after its first lease
		// renewal (lock_ttl/3 = 1 s in): the server then finishes the dead
		// worker's DATA under 1 s after the kill, long before the renewed
		// lease (2 s or more left) runs out, so it cannot overlap the
		// survivor's send.
		smtpDelay = 2 * time.Second
		conflicts = "pagewatch_worker_lock_conflicts_total"
		handedOff = `pagewatch_worker_jobs_total{outcome="handed_off"}`
	)
	b := setupWith(t, setupOptions{
		rules: "    []", load: defaultLoad,
		// One job at a time in each worker, so the jobs published while
		// the holder sends go mostly to the other.
		worker: workerConfig{Concurrency: 1, Prefetch: 1, LockTTL: lockTTL.String(), DeferDelay: deferDelay.String(),
			AckWait: (2 * lockTTL).String(), DrainTimeout: "5s", NoRateLimit: true},
		smtp: []smtptest.Option{smtptest.WithDelay(smtpDelay)},
	})
	c := b.jobsClient(t)
	locks, err := c.bus.KV(context.Background(), bus.BucketLocks, lockTTL)
	if err != nil {
		t.Fatal(err)
	}
	procs, addrs := b.startWorkers(t, 2)

	const page = 7
	pageKey := bus.Key(workerSite, workerPath(page))
	jobs := map[string]crossing.Crossing{}
	x := workerJob(page, 0)
	jobs[x.Key] = x
	c.publish(t, x)

	// Wait for a worker to lock the page: it is then sending the first job.
	var holder, survivor int
	var locked time.Time
	var acquired jetstream.KeyValueEntry
	testcheck.Eventually(t, 20*time.Second, "a worker to lock the page", func() error {
		e, err := locks.Get(context.Background(), pageKey)
		if err != nil {
			return err
		}
		locked, acquired = time.Now(), e
		value := string(e.Value())
		holder = slices.IndexFunc(procs, func(p *proc) bool {
			return strings.Contains(value, fmt.Sprintf("-%d/", p.cmd.Process.Pid))
		})
		if holder < 0 {
			t.Fatalf("lock value %q names neither worker (pids %d, %d)", value, procs[0].cmd.Process.Pid, procs[1].cmd.Process.Pid)
		}
		survivor = 1 - holder
		return nil
	})
	for i := 1; i < 4; i++ {
		x := workerJob(page, i)
		jobs[x.Key] = x
		c.publish(t, x)
	}
	// The survivor tries the page while the holder is sending: it hands
	// the jobs to the holder, or defers them.
	sending := locked.Add(3 * smtpDelay / 4) // the holder is surely still sending until then
	testcheck.Eventually(t, time.Until(sending), fmt.Sprintf("the other worker to try the locked page within %s of its locking", 3*smtpDelay/4), func() bool {
		return workerMetric(t, addrs[survivor:survivor+1], conflicts)+workerMetric(t, addrs[survivor:survivor+1], handedOff) > 0
	})
	// Kill the holder mid-send once it has renewed its lease, so the
	// lease left is close to the whole lock_ttl, and well before the
	// server accepts its mail.
	testcheck.Eventually(t, time.Until(sending), fmt.Sprintf("the holder to renew its lease within %s of locking (lock_ttl %s)", 3*smtpDelay/4, lockTTL), func() bool {
		e, err := locks.Get(context.Background(), pageKey)
		if err != nil {
			t.Fatalf("the holder's lock vanished while it was sending: %v", err)
		}
		return e.Revision() != acquired.Revision()
	})
	if n := len(b.smtp.Messages()); n != 0 {
		t.Fatalf("the server accepted %d mails before the kill: the holder was not mid-send", n)
	}
	killAt := time.Now()
	procs[holder].kill()
	e, err := locks.Get(context.Background(), pageKey)
	if err != nil {
		t.Fatalf("the dead worker's lock is gone at once: %v", err)
	}
	leaseEnd := e.Created().Add(lockTTL) // its last renewal, plus the TTL
	t.Logf("holder (pid %d) killed %s after locking the page; its lease, renewed %s before the kill, runs %s more",
		procs[holder].cmd.Process.Pid, killAt.Sub(locked).Round(time.Millisecond),
		killAt.Sub(e.Created()).Round(time.Millisecond), leaseEnd.Sub(killAt).Round(time.Millisecond))

	// A job published now can only be sent once the dead worker's lease
	// has lapsed. (The jobs handed to the dead worker come back later, when
	// their ack_wait runs out, like any job a dead worker had fetched.)
	fresh := workerJob(page, 4)
	jobs[fresh.Key] = fresh
	c.publish(t, fresh)

	mails := b.waitJobsDone(t, c, jobs, 40*time.Second)
	st := checkMails(t, mails, jobs)
	sort.Slice(mails, func(i, j int) bool { return mails[i].began.Before(mails[j].began) })
	next := slices.IndexFunc(mails, func(r received) bool { return r.began.After(killAt) && r.key == fresh.Key })
	if next < 0 {
		t.Fatal("the job published after the kill was not sent")
	}
	lapse := mails[next].began.Sub(killAt)
	// A lease lapses lock_ttl after its last renewal; the survivor's
	// deferred job comes back within 1.5 defer delays; the rest is slack
	// for the KV bucket's expiry timer and a loaded machine.
	limit := lockTTL + 5*deferDelay
	if lapse > limit {
		t.Errorf("the page's next send began %s after the kill, want at most %s (lock_ttl %s)", lapse, limit, lockTTL)
	}
	if early := leaseEnd.Sub(mails[next].began); early > 0 {
		t.Errorf("the page's next send began %s before the dead worker's lease ran out", early)
	}
	if lapse <= 0 {
		t.Errorf("lapse %s", lapse)
	}
	// The killed send: the server had its DATA and accepted it after the
	// kill; with no ledger entry, the job comes back and is mailed again
	// under the same Message-ID. No other crossing may be mailed twice.
	for key, n := range st.copies {
		if n > 1 && key != workerJob(page, 0).Key {
			t.Errorf("crossing %s mailed %d times; only the one killed mid-send may be", key, n)
		}
	}
	ov := overlaps(mails)
	for _, o := range ov {
		t.Errorf("overlapping sends of one page: %s", o)
	}
	t.Logf("next send of the page began %s after the kill (%s after the lease ran out; lock_ttl %s, defer_delay %s); %d mails for %d crossings, %d duplicates (same Message-ID), %d overlaps; survivor deferred %.0f jobs",
		lapse.Round(time.Millisecond), mails[next].began.Sub(leaseEnd).Round(time.Millisecond), lockTTL, deferDelay,
		len(mails), len(jobs), st.duplicates, len(ov), workerMetric(t, addrs[survivor:survivor+1], conflicts))
}
