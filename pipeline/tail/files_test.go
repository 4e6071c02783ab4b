package tail_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/pipeline/tail"
)

// globs sets the bundle up for glob inputs: quick discovery, and the
// glob inputs given (dir-relative, site example.com).
func (b *bundle) globs(paths ...string) {
	b.cfg.Discover.PollInterval = 100 * time.Millisecond
	b.cfg.Discover.Debounce = 20 * time.Millisecond
	b.cfg.Inputs = nil
	for _, p := range paths {
		b.cfg.Inputs = append(b.cfg.Inputs, tail.Input{Path: filepath.Join(b.dir, p), Site: "example.com"})
	}
}

// runTailer runs a tailer of cfg, its metrics in reg, until stop, which
// fails the test if the tailer takes over 5s to return.
func (b *bundle) runTailer(t testing.TB, cfg tail.Config, reg *prometheus.Registry) (stop func()) {
	t.Helper()
	tl, err := tail.New(cfg, tail.Deps{Bus: b.bus, Logger: b.logger, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := tl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx) }()
	stopped := false
	return func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("tailer: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("tailer did not stop within 5s")
		}
	}
}

// bySubject returns the offsets of the hits on each subject, failing on
// an offset of a file published twice on one subject.
func (b *bundle) bySubject(t testing.TB) map[string][]uint64 {
	t.Helper()
	ctx := context.Background()
	s, err := b.bus.JS.Stream(ctx, b.bus.HitsStreamName())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]uint64{}
	seen := map[string]bool{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		hs, err := hit.Decode(m.Data, nil)
		if err != nil {
			t.Fatal(err)
		}
		file := m.Header.Get(tail.HeaderFile)
		for _, h := range hs {
			k := fmt.Sprint(m.Subject, file, h.Offset)
			if seen[k] {
				t.Fatalf("%s: offset %d of %s published twice", m.Subject, h.Offset, file)
			}
			seen[k] = true
			out[m.Subject] = append(out[m.Subject], h.Offset)
		}
	}
	return out
}

func (b *bundle) subject(instance, path string) string {
	return b.bus.HitsSubject(instance, bus.Key(path))
}

// counts checks the number of hits on each subject, and that no other
// subject has any.
func (b *bundle) counts(t testing.TB, want map[string]int) {
	t.Helper()
	got := b.bySubject(t)
	for subj, offs := range got {
		if len(offs) != want[subj] {
			t.Errorf("%s: %d hits, want %d", subj, len(offs), want[subj])
		}
	}
	for subj, n := range want {
		if _, ok := got[subj]; !ok && n > 0 {
			t.Errorf("%s: no hits, want %d", subj, n)
		}
	}
}

// value returns the unlabelled gauge or counter name.
func value(t testing.TB, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

func mkdir(t testing.TB, path string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// Files there at start obey start_at (end: their old lines are not
// counted), files that appear later, in a directory that appears later
// too, are read from their beginning; each file has its own subject.
func TestGlobFilesBeforeAndAfterStart(t *testing.T) {
	b := setup(t)
	b.cfg.StartAt = "end"
	b.globs("logs/*/access.log")
	a := mkdir(t, filepath.Join(b.dir, "logs/a/access.log"))
	bb := mkdir(t, filepath.Join(b.dir, "logs/b/access.log"))
	appendLines(t, a, b.lines[:100]) // history: not counted
	appendLines(t, bb, b.lines[100:300])
	reg := prometheus.NewRegistry()
	stop := b.runTailer(t, b.cfg, reg)
	b.waitMessages(t, 2) // the position markers at both ends

	appendLines(t, a, b.lines[300:600])
	appendLines(t, bb, b.lines[600:750])
	c := mkdir(t, filepath.Join(b.dir, "logs/c/access.log"))
	appendLines(t, c, b.lines[750:1150]) // before discovery sees it, and after
	appendLines(t, c, b.lines[1150:1200])
	b.waitHits(t, 300+150+450)
	if n := value(t, reg, "pagewatch_ingest_tail_files"); n != 3 {
		t.Errorf("files followed: %v, want 3", n)
	}
	// The metrics of a file found late are labelled with its path.
	testcheck.Eventually(t, 5*time.Second, "c's lag 0", func() bool { return metric(t, reg, "pagewatch_ingest_tail_lag_bytes", c) == 0 })
	stop()
	b.counts(t, map[string]int{b.subject("test", a): 300, b.subject("test", bb): 150, b.subject("test", c): 450})
}

// A file matched by two globs is followed once, for the first; a file
// matched by a glob and named by a literal input is the literal input's,
// on the subject it always had.
func TestFileMatchingTwoInputsFollowedOnce(t *testing.T) {
	b := setup(t)
	b.globs("logs/*/access.log", "logs/a/*.log", "logs/b/*.log")
	literal := filepath.Join(b.dir, "logs/b/access.log")
	b.cfg.Inputs = append([]tail.Input{{Path: literal, Site: "example.com"}}, b.cfg.Inputs...)
	a := mkdir(t, filepath.Join(b.dir, "logs/a/access.log"))
	other := filepath.Join(b.dir, "logs/a/other.log")
	mkdir(t, literal)
	appendLines(t, a, b.lines[:500])
	appendLines(t, literal, b.lines[500:700])
	stop := b.runTailer(t, b.cfg, prometheus.NewRegistry())
	appendLines(t, a, b.lines[1000:1500])
	appendLines(t, other, b.lines[1500:1700])
	appendLines(t, literal, b.lines[1700:1800])
	b.waitHits(t, 1000+200+300)
	time.Sleep(300 * time.Millisecond) // three discovery polls: nothing more
	b.waitHits(t, 1500)
	stop()
	b.counts(t, map[string]int{b.subject("test", a): 1000, b.subject("test", other): 200, b.subject("test", literal): 300})
}

// logrotate inside a glob: access.log.1 is excluded by exclude_rotated,
// so it is drained by access.log's follower and never followed itself;
// the new access.log is followed from its start.
func TestRotationInsideGlob(t *testing.T) {
	b := setup(t)
	b.globs("logs/*/access.log")
	log := mkdir(t, filepath.Join(b.dir, "logs/a/access.log"))
	appendLines(t, log, nil)
	reg := prometheus.NewRegistry()
	stop := b.runTailer(t, b.cfg, reg)
	appendLines(t, log, b.lines[:1000])
	b.waitHits(t, 1000)
	appendLines(t, log, b.lines[1000:1500])
	rename(t, log, log+".1")
	appendLines(t, log+".1", b.lines[1500:1600])
	appendLines(t, log, b.lines[1600:1700]) // the new file exists...
	time.Sleep(50 * time.Millisecond)
	appendLines(t, log+".1", b.lines[1700:1800]) // ...and the old one still gets lines
	appendLines(t, log, b.lines[1800:2500])
	b.waitHits(t, 2500)
	time.Sleep(300 * time.Millisecond)
	if n := value(t, reg, "pagewatch_ingest_tail_files"); n != 1 {
		t.Errorf("files followed: %v, want 1", n)
	}
	stop()
	b.counts(t, map[string]int{b.subject("test", log): 2500})
	b.exactly(t, 2500, readLog(t, log+".1"), readLog(t, log))
}

// A glob's file deleted is let go once its path has stayed empty; a new
// file at the path is followed again, from its start, on the same
// subject. With max_files reached, a file found is refused until a
// follower ends, then followed.
func TestGlobFileDeletedAndMaxFiles(t *testing.T) {
	b := setup(t)
	b.globs("logs/*.log")
	b.cfg.MaxFiles = 2
	x, y, z := filepath.Join(b.dir, "logs/x.log"), filepath.Join(b.dir, "logs/y.log"), filepath.Join(b.dir, "logs/z.log")
	mkdir(t, x)
	appendLines(t, x, b.lines[:100])
	appendLines(t, y, b.lines[100:300])
	reg := prometheus.NewRegistry()
	stop := b.runTailer(t, b.cfg, reg)
	b.waitHits(t, 300)
	appendLines(t, z, b.lines[300:350]) // refused: two files followed
	testcheck.Eventually(t, 5*time.Second, "z refused", func() bool { return value(t, reg, "pagewatch_ingest_tail_refused_files_total") == 1 })

	if err := os.Remove(x); err != nil { // let go after rotate_grace and linger
		t.Fatal(err)
	}
	b.waitHits(t, 350) // z, followed once x's follower ended
	if n := value(t, reg, "pagewatch_ingest_tail_files"); n != 2 {
		t.Errorf("files followed: %v, want 2", n)
	}
	appendLines(t, z, b.lines[350:400])
	b.waitHits(t, 400)

	// x comes back, a new file: followed from its start when y goes.
	appendLines(t, x, b.lines[400:460])
	if err := os.Remove(y); err != nil {
		t.Fatal(err)
	}
	b.waitHits(t, 460)
	stop()
	b.counts(t, map[string]int{b.subject("test", x): 160, b.subject("test", y): 200, b.subject("test", z): 100})
}

// Stopping a tailer stops every follower, those of files found late
// included, and releases every lease.
func TestShutdownStopsAllFollowers(t *testing.T) {
	b := setup(t)
	b.globs("logs/**/access.log")
	var logs []string
	for i := range 20 {
		p := mkdir(t, filepath.Join(b.dir, "logs", strings.Repeat("d/", i%4), string(rune('a'+i)), "access.log"))
		logs = append(logs, p)
		if i < 10 {
			appendLines(t, p, b.lines[i*10:i*10+10])
		}
	}
	stop := b.runTailer(t, b.cfg, prometheus.NewRegistry())
	for i, p := range logs[10:] {
		appendLines(t, p, b.lines[100+i*10:100+i*10+10])
	}
	b.waitHits(t, 200)
	stop()
	before := b.lastSeq(t)
	for _, p := range logs {
		appendLines(t, p, b.lines[500:510])
	}
	kv, err := b.bus.KV(context.Background(), bus.BucketTailLeases, b.cfg.LeaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	if keys, err := kv.ListKeys(context.Background()); err == nil {
		n := 0
		for range keys.Keys() {
			n++
		}
		if n != 0 {
			t.Errorf("%d leases held after shutdown", n)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if after := b.lastSeq(t); after != before {
		t.Fatalf("published after shutdown: stream sequence %d, then %d", before, after)
	}
}

func TestGlobValidation(t *testing.T) {
	cfg := tail.DefaultConfig()
	cfg.Inputs = []tail.Input{
		{Path: "logs/*.log", Site: "x"},
		{Path: "/var/log/a.log", Site: "x"},
		{Path: "/var/log/a.log", Site: "x"},
		{Path: "/var/log/**x/a.log", Site: "x"},
	}
	cfg.MaxFiles = 1
	cfg.LeaseTTL = 0
	err := cfg.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`ingest.tail.inputs[0].path: must be an absolute path`,
		`ingest.tail.inputs[2].path: "/var/log/a.log" listed twice`,
		`ingest.tail.inputs[3].path: "**" must be a whole path segment`,
		`ingest.tail.max_files: must be at least 1 and at least the 2 literal input paths, got 1`,
		`ingest.tail.lease_ttl: must be 1s..10m, got 0s`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if n := strings.Count(err.Error(), "listed twice"); n != 1 {
		t.Errorf("listed twice reported %d times:\n%v", n, err)
	}
	// A relative literal path keeps working, as before globs.
	cfg.Inputs = []tail.Input{{Path: "access.log", Site: "x"}}
	cfg.MaxFiles, cfg.LeaseTTL = 1000, 15*time.Second
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}

// --from-start with a glob input: each file found has its rotated
// siblings (excluded from the glob by exclude_rotated) published once, as
// for a literal input, and another live file in the same directory whose
// name extends the first's (access.log.ssl) is not taken for a sibling.
func TestBackfillGlob(t *testing.T) {
	b := setup(t)
	b.globs("logs/*/access.log*")
	b.log = mkdir(t, filepath.Join(b.dir, "logs/a/access.log"))
	files := b.siblingsOnDisk(t) // 7,000 lines
	ssl := b.log + ".ssl"
	appendLines(t, ssl, b.lines[7000:7500])
	files = append(files, readLog(t, ssl))
	if err := b.runBackfill(context.Background(), t, nil, tail.BackfillOptions{Only: true}); err != nil {
		t.Fatal(err)
	}
	b.exactly(t, 7500, files...)
	got := b.bySubject(t)
	if n := len(got[b.subject("test", b.log)]); n != 999 {
		t.Errorf("live file: %d hits on its subject, want 999", n)
	}
	if n := len(got[b.subject("test", ssl)]); n != 500 {
		t.Errorf("%s: %d hits on its subject, want 500", ssl, n)
	}
}
