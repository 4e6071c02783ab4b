package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/internal/testcheck"
)

func TestCalendarDayInBerlinAcrossDST(t *testing.T) {
	b := setup(t)
	r := rule("daily", "/pricing", "day", 100)
	r.Zone = "Europe/Berlin"
	b.cfg.Rules = []rules.Rule{r}
	b.cfg.LagTolerance = 2 * time.Minute
	berlin, _ := time.LoadLocation("Europe/Berlin")
	// 2026-03-29 has 23 hours in Berlin: clocks jump from 02:00 to 03:00.
	day := func(h, m int) time.Time { return time.Date(2026, 3, 29, h, m, 0, 0, berlin) }
	c := &clock{t: day(0, 30)}
	s := b.sweeper(t, c)
	sweepAt := func(at time.Time) { c.set(at); b.sweep(t, s) }

	b.addHits(t, "/pricing", 60, day(0, 10)) // 23:10 UTC the day before: Berlin's day already
	b.addHits(t, "/pricing", 30, day(1, 50))
	sweepAt(day(4, 0))
	b.addHits(t, "/pricing", 10, day(23, 50))
	b.addHits(t, "/pricing", 500, time.Date(2026, 3, 28, 23, 30, 0, 0, berlin)) // the day before: not counted
	sweepAt(day(23, 59))                                                        // 100 hits: not more than 100
	if n := len(b.jobs(t)); n != 0 {
		t.Fatalf("fired before the count passed 100: %v", fired(b.jobs(t)))
	}
	// A late hit, loaded after the day ended: the day is judged
	// lag_tolerance after midnight, so it still counts.
	b.addHits(t, "/pricing", 1, day(23, 59))
	sweepAt(time.Date(2026, 3, 30, 0, 1, 0, 0, berlin))
	sweepAt(time.Date(2026, 3, 30, 0, 3, 0, 0, berlin))
	sweepAt(time.Date(2026, 3, 30, 0, 10, 0, 0, berlin))
	jobs := b.jobs(t)
	if len(jobs) != 1 || jobs[0].Count != 101 || !strings.HasSuffix(jobs[0].Key, ".2026-03-29.100") {
		t.Fatalf("want one crossing of 2026-03-29 with 101 hits, got %+v", jobs)
	}
	if got := jobs[0].WindowTo.Sub(jobs[0].WindowFrom); got != 23*time.Hour {
		t.Errorf("the DST day spans %s, want 23h", got)
	}
	// The next day starts at zero and fires on its own.
	b.addHits(t, "/pricing", 101, time.Date(2026, 3, 30, 9, 0, 0, 0, berlin))
	sweepAt(time.Date(2026, 3, 30, 9, 5, 0, 0, berlin))
	if jobs := b.jobs(t); len(jobs) != 2 || !strings.HasSuffix(jobs[1].Key, ".2026-03-30.100") {
		t.Fatalf("want a second crossing for 2026-03-30, got %v", fired(jobs))
	}
}

func TestSweeperDownTenMinutesCatchesUp(t *testing.T) {
	b := setup(t)
	b.cfg.Rules = []rules.Rule{rule("burst", "/pricing", "5m", 100), rule("daily", "/pricing", "day", 150)}
	base := time.Now().UTC().Truncate(24 * time.Hour).Add(-3 * 24 * time.Hour).Add(23*time.Hour + 50*time.Minute)
	c := &clock{t: base}
	s := b.sweeper(t, c)
	b.sweep(t, s) // 23:50: nothing yet
	s.leader.release(context.Background())

	// While no sweeper runs (23:50 to 00:05): a burst that is gone again
	// by 00:05, and a day that closes with 160 hits.
	b.addHits(t, "/pricing", 60, base.Add(2*time.Minute))
	b.addHits(t, "/pricing", 50, base.Add(3*time.Minute))
	b.addHits(t, "/pricing", 50, base.Add(4*time.Minute))
	c.set(base.Add(15 * time.Minute))
	restarted := b.sweeper(t, c) // a new process: state and progress come from KV
	b.sweep(t, restarted)
	b.sweep(t, restarted)
	// The burst passed 100 at 23:53 (110 in 5 minutes); the day closed at 160.
	got := fired(b.jobs(t))
	if len(got) != 2 || got[0] != "burst 100 110" || got[1] != "daily 150 160" {
		t.Fatalf("want the missed burst and the closed day once each, got %v", got)
	}
}

func TestStormGuardFoldsTenThousandPages(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 crossings: not in -short")
	}
	b := setup(t)
	r := rule("blog", "", "1h", 10)
	r.Path, r.Match = "", rules.Match{Glob: "/blog/*"}
	r.StormGuard.MaxIndividual = 25
	b.cfg.Rules = []rules.Rule{r}
	now := time.Now().UTC()
	b.seq++
	batch := hit.Batch{Seq: b.seq}
	for p := 0; p < 10000; p++ {
		for i := 0; i < 11+p%7; i++ {
			batch.Hits = append(batch.Hits, hit.Hit{Time: now.Add(-time.Minute), Site: "example.com", Path: fmt.Sprintf("/blog/post-%d", p), Offset: uint64(p*100 + i)})
		}
	}
	if err := b.ch.Hits().InsertHits(context.Background(), []hit.Batch{batch}); err != nil {
		t.Fatal(err)
	}
	s := b.sweeper(t, nil)
	b.sweep(t, s)
	b.sweep(t, s)
	jobs := b.jobs(t)
	if len(jobs) != 26 {
		t.Fatalf("want 25 mails and 1 digest, got %d jobs", len(jobs))
	}
	var digests, folded int
	for _, x := range jobs {
		if x.Digest != nil {
			digests++
			folded = x.Digest.Total
			if len(x.Digest.Items) != 1000 {
				t.Errorf("digest lists %d pages, want the 1000 busiest", len(x.Digest.Items))
			}
		} else if x.Count != 17 {
			t.Errorf("mailed one by one: %s with %d views; want the busiest (17) first", x.Path, x.Count)
		}
	}
	if digests != 1 || folded != 9975 {
		t.Errorf("want 1 digest of 9975, got %d of %d", digests, folded)
	}
	if got := b.chSrv.Query(t, "SELECT count() FROM pagewatch.crossings FINAL"); got != "10000\n" {
		t.Errorf("crossings history = %q, want every one of 10000", got)
	}
}

func TestLeaderLease(t *testing.T) {
	b := setup(t)
	b.cfg.LeaderTTL = 2 * time.Second
	b.addHits(t, "/pricing", 500, time.Now().Add(-time.Minute))
	a, other := b.sweeper(t, nil), b.sweeper(t, nil)
	b.sweep(t, a)
	b.sweep(t, other) // a leads: other does not sweep
	if v := testMetric(t, other.metrics.sweeps); v != 0 {
		t.Fatalf("the second sweeper swept %v times while the first led", v)
	}
	// a dies without releasing: its lease stops being renewed.
	a.leader.mu.Lock()
	a.leader.lease.Abandon()
	a.leader.mu.Unlock()
	testcheck.Eventually(t, 10*time.Second, "the second sweeper to take over a 2s lease that lapsed", func() bool {
		b.sweep(t, other)
		return testMetric(t, other.metrics.sweeps) > 0
	})
	if jobs := b.jobs(t); len(jobs) != 2 {
		t.Fatalf("want each crossing once across the takeover, got %v", fired(jobs))
	}
}

func TestMalformedRuleFileKeepsOldRules(t *testing.T) {
	b := setup(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "pricing.yaml")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("rules:\n  - {name: from-file, site: example.com, path: /pricing, threshold: 10, window: 1h, notify: {recipients: [ops@example.com]}}\n")
	b.cfg.Rules = nil
	b.cfg.RulesPath = dir
	rs, err := LoadRules(b.cfg)
	if err != nil || len(rs) != 1 {
		t.Fatalf("LoadRules: %v, %d rules", err, len(rs))
	}
	s := b.sweeper(t, nil)
	s.rules.reloader = fileSource{b.cfg}

	write("rules:\n  - name: from-file\n    site: example.com\n    path: /pricing\n    threshold: 10\n    window: 1h\n    notify: {recipients: [ops@example.com]}\n  - name: broken\n    site: example.com\n    match: {glob: /a/**b}\n    threshold: 10\n    window: fortnight\n    notify: {recipients: [ops@example.com]}\n")
	err = s.Reload()
	for _, want := range []string{file + ":8: rules[1].match.glob", file + ":8: rules[1].window"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("reload error %v does not name %q", err, want)
		}
	}
	if got := len(s.rules.current().rules); got != 1 || s.rules.current().rules[0].Name != "from-file" {
		t.Fatalf("the old rules must stay in force, have %d", got)
	}
	b.addHits(t, "/pricing", 11, time.Now().Add(-time.Minute))
	b.sweep(t, s)
	if got := fired(b.jobs(t)); len(got) != 1 {
		t.Fatalf("the old rule still fires: %v", got)
	}

	write("rules:\n  - {name: from-file, site: example.com, path: /pricing, threshold: 10, window: 1h, notify: {recipients: [ops@example.com]}, unknown: 1}\n")
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), "rules[0].unknown (line 2): unknown key") {
		t.Errorf("unknown key: %v", err)
	}
}

type fileSource struct{ cfg Config }

func (f fileSource) Load() ([]rules.Rule, error) { return LoadRules(f.cfg) }
func (f fileSource) Files() []string             { fs, _ := RuleFiles(f.cfg.RulesPath); return fs }

func testMetric(t testing.TB, c prometheus.Collector) float64 {
	t.Helper()
	return testutil.ToFloat64(c)
}

// A backtest starts all-time rules from the count before since, however
// small: 80 earlier hits plus 30 in the window pass 100.
func TestBacktestCountsFromTheStoredTotal(t *testing.T) {
	b := setup(t)
	b.cfg.Rules = []rules.Rule{rule("total", "/pricing", "all", 100)}
	now := time.Now().UTC()
	b.addHits(t, "/pricing", 80, now.Add(-3*time.Hour))
	b.addHits(t, "/pricing", 30, now.Add(-time.Hour))
	s := b.sweeper(t, nil)
	xs, err := s.Backtest(context.Background(), now.Add(-2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(xs) != 1 || xs[0].Count != 110 {
		t.Fatalf("want one crossing at 110, got %+v", xs)
	}
}
