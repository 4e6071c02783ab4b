package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/natscluster"
)

// clusterMilestones is every 100 views up to what the busiest page of the
// repeated log reaches: each page crosses one milestone per 100 views, so
// crossings keep firing over the whole run, on a few dozen pages.
func clusterMilestones(upTo int) []int {
	var ts []int
	for v := 100; v < upTo; v += 100 {
		ts = append(ts, v)
	}
	return ts
}

// TestClusterNATSNodesFailMidNotify runs the whole pipeline (tail, load,
// two sweepers, two workers, a real SMTP server) on a 3-node NATS cluster
// with streams and buckets at replicas 3, while real lines are appended,
// and disturbs the cluster three ways in the one run: the jobs stream's
// leader SIGKILLed and restarted, the locks bucket's leader frozen
// (SIGSTOP) for 20 s, then every node restarted in turn. A milestone rule
// (every 100 views of every page, all time) makes crossings fire all
// along. Required: every line in ClickHouse once; the crossings history
// holds exactly the milestones the final counts passed; each crossing
// mailed exactly once (no second Message-ID), no two sends of one page at
// once; the jobs stream ends empty and the sent ledger complete; and no
// page lock is seen held longer than lock_ttl after its last renewal.
func TestClusterNATSNodesFailMidNotify(t *testing.T) {
	const (
		passes   = 6
		writeFor = 45 * time.Second
		lockTTL  = 3 * time.Second
		// Slack for the bucket's expiry timer and a loaded machine.
		lockSlack    = 2 * time.Second
		claimTimeout = 40 * time.Second
	)
	began := time.Now()
	cl := natscluster.Start(t, 3, natscluster.Build(t, binaries(t)))
	// The busiest page, /favicon.ico, has 808 views a pass (one asked as //favicon.ico).
	ms := clusterMilestones(808 * passes)
	list := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(ms)), ", "), "[]")
	rule := fmt.Sprintf(`    - {name: every-100, site: example.com, match: {glob: "/**"}, threshold: [%s], window: all, storm_guard: {max_individual: 10000}, notify: {recipients: [ops@example.com]}}`, list)
	b := setupWith(t, setupOptions{rules: rule, load: bigLoad, cluster: cl,
		worker: workerConfig{Concurrency: 2, Prefetch: 8, LockTTL: lockTTL.String(), DeferDelay: "200ms",
			AckWait: (2 * lockTTL).String(), DrainTimeout: "5s", NoRateLimit: true,
			// Longer than the freeze: a worker whose connection is to the
			// frozen node cannot record a send until it resumes, and
			// another must not take its claim over meanwhile.
			ClaimTimeout: claimTimeout.String()}})
	src := newRepeatedLog(t, passes)
	bb := b.hitsBus(t)
	c := b.jobsClient(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("%d lines (%d bytes), %d milestones, seed %d", src.lines(), src.size(), len(ms), seed)

	var daemons []*proc
	daemons = append(daemons, b.start(t, "ingest", "load"), b.start(t, "ingest", "tail"))
	workers, _ := b.startWorkers(t, 2)
	daemons = append(daemons, workers...)
	sweepers := []*proc{b.start(t, "sweeper"), b.start(t, "sweeper")}
	daemons = append(daemons, sweepers...)
	// The disruptions are to hit a running pipeline, not its start-up.
	// Creating a dozen streams and buckets at replicas 3 takes a start-up
	// tens of seconds on a busy 2-core machine.
	for _, p := range append(append([]*proc{}, workers...), sweepers...) {
		addr := p.adminAddr(t)
		testcheck.Eventually(t, 2*time.Minute, p.name+" ready", func() error {
			if code, body := readyz(addr); code != http.StatusOK {
				return fmt.Errorf("/readyz %d %q", code, body)
			}
			return nil
		})
	}
	t.Logf("workers and sweepers ready %s after the cluster started", time.Since(began).Round(100*time.Millisecond))
	locks := watchLocks(t, cl, b, lockTTL, lockSlack)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	app := &appender{src: src, path: b.log}
	wrote := make(chan error, 1)
	writeBegan := time.Now()
	go func() {
		wrote <- app.run(ctx, rand.New(rand.NewPCG(seed, 18)), float64(src.size())/writeFor.Seconds())
	}()
	at := func(pct int) { time.Sleep(time.Until(writeBegan.Add(writeFor * time.Duration(pct) / 100))) }
	progress := func(what string) {
		t.Logf("%s at %s: %.0f%% written, %d hits loaded, %d mails", what, time.Since(writeBegan).Round(100*time.Millisecond),
			100*float64(app.written.Load())/float64(src.size()), b.hitCount(t), len(b.smtp.Messages()))
	}

	at(15)
	killAndRestart(t, cl, cl.StreamLeader(t, bb.JobsStreamName()), "the jobs stream's leader", progress)
	at(35)
	freeze(t, cl, cl.StreamLeader(t, "KV_pagewatch_"+bus.BucketLocks), "the locks bucket's leader", progress)
	at(85)
	rollingRestart(t, cl, progress)

	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	b.waitHits(t, src.lines(), 2*time.Minute)

	// What the final counts say must have fired: one crossing per
	// milestone each page passed (a count above the threshold).
	want := 0
	for _, n := range b.pageCounts(t) {
		for _, m := range ms {
			if n > m {
				want++
			}
		}
	}
	testcheck.Eventually(t, time.Minute, fmt.Sprintf("%d crossings in the history", want), func() error {
		got := b.count(t, "SELECT count() FROM pagewatch.crossings FINAL")
		if got > want {
			t.Fatalf("the crossings history holds %d crossings, more than the %d milestones passed", got, want)
		}
		if got != want {
			return fmt.Errorf("%d crossings", got)
		}
		return nil
	})
	jobs := b.clusterCrossings(t)
	mails := b.waitJobsDone(t, c, jobs, time.Minute)
	for _, p := range daemons {
		alive(t, p)
	}
	st := checkMails(t, mails, jobs)
	if len(st.missing) != 0 || st.duplicates != 0 || len(mails) != len(jobs) {
		t.Errorf("%d mails for %d crossings: %d duplicates, %d never mailed", len(mails), len(jobs), st.duplicates, len(st.missing))
	}
	for key, n := range st.copies {
		if n > 1 {
			t.Errorf("crossing %s mailed %d times", key, n)
		}
	}
	ov := overlaps(mails)
	for i, o := range ov {
		if i == 10 {
			t.Errorf("... and %d more overlaps", len(ov)-10)
			break
		}
		t.Errorf("overlapping sends of one page: %s", o)
	}
	if n := c.ledgerSize(t); n != len(jobs) {
		t.Errorf("the sent ledger holds %d crossings, want %d", n, len(jobs))
	}
	// Once everything is sent, every page lock is released or lapses.
	testcheck.Eventually(t, lockTTL+lockSlack, "no page lock left", func() error {
		if held := locks.held(); len(held) > 0 {
			return fmt.Errorf("page locks still held: %v", held)
		}
		return nil
	})
	locks.stop()
	for _, v := range locks.violations() {
		t.Errorf("page lock held past lock_ttl: %s", v)
	}
	inserted := b.checkRepeatedLog(t, src)
	history := strings.TrimSpace(b.ch.Query(t, "SELECT outcome, count() FROM pagewatch.notifications GROUP BY outcome ORDER BY outcome"))
	t.Logf("%d lines, each in ClickHouse once (%d rows inserted); %d crossings, %d mails, %d duplicates, %d overlapping sends of one page; lock watch: %s; history: %s; test took %s",
		src.lines(), inserted, len(jobs), len(mails), st.duplicates, len(ov), locks, strings.NewReplacer("\t", " ", "\n", ", ").Replace(history),
		time.Since(began).Round(time.Millisecond))
}

// pageCounts is each page's count of distinct hits, as page_minutes
// (what the sweeper reads) holds them.
func (b *bundle) pageCounts(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	rows := b.ch.Query(t, `SELECT hex(path), sum(h) FROM (
    SELECT path, any(hits) AS h FROM pagewatch.page_minutes GROUP BY site, path, minute, seq
) GROUP BY path`)
	for _, line := range strings.Split(strings.TrimSpace(rows), "\n") {
		hexPath, n, _ := strings.Cut(line, "\t")
		path, err := unhex(hexPath)
		if err != nil {
			t.Fatalf("page_minutes path %q: %v", hexPath, err)
		}
		if out[path], err = strconv.Atoi(n); err != nil {
			t.Fatalf("page_minutes count %q", line)
		}
	}
	return out
}

// clusterCrossings is the crossings history, as the jobs checkMails
// compares the mails with.
func (b *bundle) clusterCrossings(t *testing.T) map[string]crossing.Crossing {
	t.Helper()
	out := map[string]crossing.Crossing{}
	rows := b.ch.Query(t, "SELECT crossing_key, hex(path) FROM pagewatch.crossings FINAL")
	for _, line := range strings.Split(strings.TrimSpace(rows), "\n") {
		key, hexPath, _ := strings.Cut(line, "\t")
		path, err := unhex(hexPath)
		if err != nil {
			t.Fatalf("crossings path %q: %v", hexPath, err)
		}
		out[key] = crossing.Crossing{Key: key, Site: workerSite, Path: path}
	}
	return out
}

// lockWatch looks at the page locks every 250 ms, each time through a
// connection of its own to whichever node answers (one may be frozen),
// and notes a lock whose last write is older than lock_ttl and slack yet
// is still there: a lease that neither its holder's release nor the
// bucket's TTL ended. A violation counts only when two looks a second
// apart see the same revision, so one stale answer cannot fail the test.
type lockWatch struct {
	url        string
	ttl, slack time.Duration
	done       chan struct{}
	wg         sync.WaitGroup

	mu        sync.Mutex
	looks     int
	failed    int // looks no node answered
	seen      map[string]bool
	live      []string            // page locks present at the last look
	suspects  map[string]lockSeen // key → a too-old revision seen once
	violating map[string]string   // key and revision → what was seen
}

type lockSeen struct {
	rev uint64
	at  time.Time
}

func watchLocks(t *testing.T, cl *natscluster.Cluster, b *bundle, ttl, slack time.Duration) *lockWatch {
	t.Helper()
	w := &lockWatch{url: cl.URL, ttl: ttl, slack: slack, done: make(chan struct{}), seen: map[string]bool{}, suspects: map[string]lockSeen{}, violating: map[string]string{}}
	// The bucket as the workers open it, with their TTL, before the first look.
	if _, err := b.jobsClient(t).bus.KV(context.Background(), bus.BucketLocks, ttl); err != nil {
		t.Fatal(err)
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
			w.look()
		}
	}()
	t.Cleanup(w.stop)
	return w
}

func (w *lockWatch) stop() {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	w.wg.Wait()
}

func (w *lockWatch) look() {
	nc, err := nats.Connect(w.url, nats.Timeout(time.Second), nats.NoReconnect())
	if err != nil {
		w.fail()
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		w.fail()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, "pagewatch_"+bus.BucketLocks)
	if err != nil {
		w.fail()
		return
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		w.fail()
		return
	}
	type entry struct {
		key     string
		rev     uint64
		written time.Time
	}
	var entries []entry
	for k := range keys.Keys() {
		if strings.HasPrefix(k, "digest.") {
			continue
		}
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // released or lapsed since the listing
		}
		if err != nil {
			w.fail()
			return
		}
		entries = append(entries, entry{k, e.Revision(), e.Created()})
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.looks++
	w.live = w.live[:0]
	old := map[string]lockSeen{}
	for _, e := range entries {
		w.seen[e.key] = true
		w.live = append(w.live, e.key)
		if age := now.Sub(e.written); age > w.ttl+w.slack {
			if s, ok := w.suspects[e.key]; ok && s.rev == e.rev && now.Sub(s.at) >= time.Second {
				w.violating[fmt.Sprint(e.key, e.rev)] = fmt.Sprintf("%s revision %d written at %s, still there %s later", e.key, e.rev, e.written.Format("15:04:05.000"), age.Round(time.Millisecond))
			}
			if s, ok := w.suspects[e.key]; ok && s.rev == e.rev {
				old[e.key] = s
			} else {
				old[e.key] = lockSeen{e.rev, now}
			}
		}
	}
	w.suspects = old
}

func (w *lockWatch) fail() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.looks++
	w.failed++
}

// held lists the page locks present at the last look.
func (w *lockWatch) held() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.live...)
}

func (w *lockWatch) violations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, v := range w.violating {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

func (w *lockWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%d looks (%d unanswered), %d pages locked at some look, %d locks held past lock_ttl", w.looks, w.failed, len(w.seen), len(w.violating))
}
