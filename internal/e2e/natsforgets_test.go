package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/natscluster"
)

// NATS acknowledges a write before it is on disk (JetStream's
// sync_interval, 2 minutes by default; replicated streams flush
// asynchronously), so a power cut takes the last acknowledged writes
// with it: Jepsen lost acknowledged messages, sometimes whole streams,
// in NATS 2.12.1. These tests make NATS forget: every server is frozen
// (SIGSTOP) and its store copied, as a disk would hold it if the power
// failed then; the servers run on for 5 to 20 s, taking writes the
// daemons are told are stored; then they are SIGKILLed, their stores put
// back to the copies, and started again. Tail, load, sweeper and worker
// run as processes throughout, with lines appended all along and a
// milestone rule firing all along.
//
// What must hold: every line in ClickHouse exactly once (positions are
// the last message of each file's subject, and event ids come from what
// a line is, not from where NATS stored it); no crossing lost (each
// milestone the final counts passed mailed at least once); and a
// crossing mailed twice only if NATS forgot its mail (its sent ledger
// entry, or the ack of its job).

// forgetPlan is one run.
type forgetPlan struct {
	nodes    int // 1: a standalone server; 3: a cluster, replicas 3
	passes   int // of the real log
	writeFor time.Duration
	at       float64       // share of writeFor at which the stores are copied
	runOn    time.Duration // shortest run on after the copy; up to 15 s more
}

// TestNATSForgetsLastWrites: one standalone nats-server forgets 5-20 s
// of acknowledged writes mid-run.
func TestNATSForgetsLastWrites(t *testing.T) {
	runForgets(t, forgetPlan{nodes: 1, passes: 3, writeFor: 30 * time.Second, at: 0.2, runOn: 5 * time.Second})
}

// TestClusterNATSForgetsLastWrites: all three nodes of a cluster (streams
// and buckets at replicas 3) lose power at once and come back without
// their last 5-20 s.
func TestClusterNATSForgetsLastWrites(t *testing.T) {
	runForgets(t, forgetPlan{nodes: 3, passes: 4, writeFor: 45 * time.Second, at: 0.2, runOn: 5 * time.Second})
}

func runForgets(t *testing.T, plan forgetPlan) {
	began := time.Now()
	bin := natscluster.Build(t, binaries(t))
	cl := natscluster.StartWith(t, plan.nodes, bin, natscluster.Options{Standalone: plan.nodes == 1})
	src := newRepeatedLog(t, plan.passes)
	// The busiest page, /favicon.ico, has 808 views a pass (one asked as //favicon.ico).
	ms := clusterMilestones(808 * plan.passes)
	list := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(ms)), ", "), "[]")
	rule := fmt.Sprintf(`    - {name: every-100, site: example.com, match: {glob: "/**"}, threshold: [%s], window: all, storm_guard: {max_individual: 10000}, notify: {recipients: [ops@example.com]}}`, list)
	b := setupWith(t, setupOptions{rules: rule, load: bigLoad, cluster: cl,
		worker: workerConfig{LockTTL: "5s", DeferDelay: "200ms", AckWait: "10s", DrainTimeout: "5s", NoRateLimit: true}})
	bb := b.hitsBus(t)
	c := b.jobsClient(t)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 25))
	runOn := plan.runOn + time.Duration(rng.IntN(15_000))*time.Millisecond
	t.Logf("%d lines (%d bytes), %d milestones, %d NATS node(s), seed %d: NATS runs on %s after its stores are copied",
		src.lines(), src.size(), len(ms), plan.nodes, seed, runOn.Round(time.Millisecond))

	built := time.Now() // the binaries are built once per test process
	daemons := []*proc{b.start(t, "ingest", "load"), b.start(t, "ingest", "tail"), b.start(t, "sweeper"), b.start(t, "worker", "run")}
	for _, p := range daemons {
		addr := p.adminAddr(t)
		testcheck.Eventually(t, 2*time.Minute, p.name+" ready", func() error {
			if code, body := readyz(addr); code != http.StatusOK {
				return fmt.Errorf("/readyz %d %q", code, body)
			}
			return nil
		})
	}

	t.Logf("daemons ready %s after they started", time.Since(built).Round(100*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	app := &appender{src: src, path: b.log}
	wrote := make(chan error, 1)
	writeBegan := time.Now()
	go func() {
		wrote <- app.run(ctx, rand.New(rand.NewPCG(seed, 26)), float64(src.size())/plan.writeFor.Seconds())
	}()
	progress := func(what string) {
		t.Logf("%s at %s: %.0f%% written, %d hits loaded, %d crossings recorded, %d mails", what, time.Since(writeBegan).Round(100*time.Millisecond),
			100*float64(app.written.Load())/float64(src.size()), b.hitCount(t), b.count(t, "SELECT count() FROM pagewatch.crossings FINAL"), len(b.smtp.Messages()))
	}
	time.Sleep(time.Until(writeBegan.Add(time.Duration(plan.at * float64(plan.writeFor)))))

	// The copy: every node frozen at once, as a power cut stops them.
	progress("stores copied")
	copyAt := time.Now()
	for i := range cl.Nodes {
		cl.Stop(t, i)
	}
	snaps := make([]string, len(cl.Nodes))
	for i := range cl.Nodes {
		snaps[i] = cl.Snapshot(t, i)
	}
	for i := range cl.Nodes {
		cl.Continue(t, i)
	}
	time.Sleep(runOn)
	before := natsFigures(t, bb)
	progress("power cut")
	for i := range cl.Nodes {
		cl.Kill(t, i)
	}
	for i := range cl.Nodes {
		cl.Restore(t, i, snaps[i])
	}
	// Until now every claim in the sent ledger was written to a NATS
	// that forgets it; a mail the SMTP server accepts up to here may be
	// one in flight when the power went (its claim written before).
	upAt := time.Now()
	for i := range cl.Nodes {
		cl.Restart(t, i)
	}
	cl.WaitReady(t, 2*time.Minute)
	after := natsFigures(t, bb)
	progress("NATS back")
	forgot := forgotten(before, after)
	t.Logf("NATS forgot: %s", strings.Join(forgot, "; "))
	if len(forgot) == 0 {
		t.Errorf("NATS forgot nothing: the test tested nothing")
	}

	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	stream := b.hitsStream(t, bb.HitsStreamName())
	subject := bb.HitsSubject("e2e", bus.Key(b.log))
	waitPublished(t, stream, subject, src.size(), 2*time.Minute)
	b.waitHits(t, src.lines(), 2*time.Minute)
	progress("every line loaded")

	// What must have fired: each milestone each page's final count
	// passed, the count taken from the distinct hits (the lines), not
	// from the per-minute counts the sweeper reads.
	counts := b.distinctPageCounts(t)
	want := map[string]bool{} // "path threshold"
	for path, n := range counts {
		for _, m := range ms {
			if n > m {
				want[fmt.Sprint(path, " ", m)] = true
			}
		}
	}
	var recorded map[string]string // crossing key → "path threshold"
	testcheck.Eventually(t, time.Minute, fmt.Sprintf("%d crossings in the history", len(want)), func() error {
		recorded = b.recordedCrossings(t)
		if len(recorded) < len(want) {
			return fmt.Errorf("%d crossings", len(recorded))
		}
		return nil
	})
	progress("every crossing recorded")
	b.waitJobsDone(t, c, b.clusterCrossings(t), time.Minute)
	progress("every crossing mailed")
	time.Sleep(3 * time.Second) // three more sweeps: nothing new may fire
	jobs := b.clusterCrossings(t)
	mails := b.waitJobsDone(t, c, jobs, time.Minute)
	recorded = b.recordedCrossings(t)
	for _, p := range daemons {
		alive(t, p)
	}

	st := checkMails(t, mails, jobs)
	got := map[string]bool{}
	for _, pt := range recorded {
		got[pt] = true
	}
	var lost, spurious []string
	for pt := range want {
		if !got[pt] {
			lost = append(lost, pt)
		}
	}
	for pt := range got {
		if !want[pt] {
			spurious = append(spurious, pt)
		}
	}
	sort.Strings(lost)
	sort.Strings(spurious)
	if len(lost) > 0 {
		t.Errorf("%d crossings of the %d the final counts passed never recorded, e.g. %v", len(lost), len(want), lost[:min(5, len(lost))])
	}
	if len(st.missing) > 0 {
		t.Errorf("%d recorded crossings never mailed, e.g. %v", len(st.missing), st.missing[:min(5, len(st.missing))])
	}
	if len(spurious) > 0 {
		t.Errorf("%d crossings recorded that the final counts did not pass, e.g. %v", len(spurious), spurious[:min(5, len(spurious))])
	}
	// A mail twice is what NATS forgetting may cost, and only for a mail
	// whose record in the sent ledger it forgot: one sent after the copy
	// (or a moment before, its record written after), before NATS was
	// started again (a send in flight at the cut is accepted after it).
	first := map[string]time.Time{}
	for _, m := range mails {
		if at, ok := first[m.key]; !ok || m.accepted.Before(at) {
			first[m.key] = m.accepted
		}
	}
	inWindow := 0
	for _, at := range first {
		if at.After(copyAt.Add(-time.Second)) && at.Before(upAt) {
			inWindow++
		}
	}
	for key, n := range st.copies {
		if at := first[key]; n > 1 && (at.Before(copyAt.Add(-time.Second)) || at.After(upAt)) {
			t.Errorf("crossing %s mailed %d times, first at %s: not while NATS ran on to be forgotten (%s to %s)",
				key, n, at.Format("15:04:05.000"), copyAt.Format("15:04:05.000"), upAt.Format("15:04:05.000"))
		}
	}

	sf := checkSubject(t, stream, subject)
	if sf.lines != src.lines() || sf.end != src.size() {
		t.Errorf("the subject's messages carry %d lines up to byte %d; the file has %d lines, %d bytes", sf.lines, sf.end, src.lines(), src.size())
	}
	inserted := b.checkRepeatedLog(t, src)
	t.Logf("lines: %d written, %d distinct hits in ClickHouse (%d rows inserted); subject tiles the file with %d messages",
		src.lines(), b.hitCount(t), inserted, sf.msgs)
	t.Logf("crossings: %d expected from the final counts, %d recorded, %d lost, %d spurious; mails: %d for %d crossings, %d duplicates, %d never mailed (%d crossings first mailed while NATS ran on to be forgotten)",
		len(want), len(recorded), len(lost), len(spurious), len(mails), len(jobs), st.duplicates, len(st.missing), inWindow)
	history := strings.TrimSpace(b.ch.Query(t, "SELECT outcome, count() FROM pagewatch.notifications GROUP BY outcome ORDER BY outcome"))
	t.Logf("notifications history: %s; test took %s, %s of it from the daemons' start", strings.NewReplacer("\t", " ", "\n", ", ").Replace(history),
		time.Since(began).Round(time.Millisecond), time.Since(built).Round(time.Millisecond))
}

// natsFigure is a stream's state: its last sequence and messages.
type natsFigure struct{ last, msgs uint64 }

// natsFigures reads every stream's state (KV buckets are streams KV_*).
func natsFigures(t *testing.T, bb *bus.Bus) map[string]natsFigure {
	t.Helper()
	out := map[string]natsFigure{}
	testcheck.Eventually(t, time.Minute, "the streams' states", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		names := bb.JS.StreamNames(ctx)
		var list []string
		for n := range names.Name() {
			list = append(list, n)
		}
		if err := names.Err(); err != nil {
			return err
		}
		for _, n := range list {
			s, err := bb.JS.Stream(ctx, n)
			if err != nil {
				return err
			}
			info, err := s.Info(ctx)
			if err != nil {
				return err
			}
			out[n] = natsFigure{info.State.LastSeq, info.State.Msgs}
		}
		return nil
	})
	return out
}

// forgotten says, per stream, what a restart lost: how far its last
// sequence went back, and whether it is gone.
func forgotten(before, after map[string]natsFigure) []string {
	var out []string
	for name, b := range before {
		a, ok := after[name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s gone (last sequence %d)", name, b.last))
		case a.last < b.last:
			out = append(out, fmt.Sprintf("%s back from sequence %d to %d (%d writes; %d messages to %d)", name, b.last, a.last, b.last-a.last, b.msgs, a.msgs))
		}
	}
	sort.Strings(out)
	return out
}

// distinctPageCounts is each page's count of distinct hits.
func (b *bundle) distinctPageCounts(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	rows := b.ch.Query(t, `SELECT hex(path), count() FROM (SELECT DISTINCT path, seq, line_offset FROM pagewatch.hits) GROUP BY path`)
	for _, line := range strings.Split(strings.TrimSpace(rows), "\n") {
		hexPath, n, _ := strings.Cut(line, "\t")
		path, err := unhex(hexPath)
		if err != nil {
			t.Fatalf("hits path %q: %v", hexPath, err)
		}
		if out[path], err = strconv.Atoi(n); err != nil {
			t.Fatalf("hits count %q", line)
		}
	}
	return out
}

// recordedCrossings is the crossings history: key → "path threshold".
func (b *bundle) recordedCrossings(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	rows := strings.TrimSpace(b.ch.Query(t, "SELECT crossing_key, hex(path), threshold FROM pagewatch.crossings FINAL"))
	if rows == "" {
		return out
	}
	for _, line := range strings.Split(rows, "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			t.Fatalf("crossings row %q", line)
		}
		path, err := unhex(f[1])
		if err != nil {
			t.Fatalf("crossings path %q: %v", f[1], err)
		}
		out[f[0]] = path + " " + f[2]
	}
	return out
}
