package sweep

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/internal/procstat"
	"github.com/pagewatch/pagewatch/internal/testenv"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
)

// benchRules is the 1,000 rules over 10 sites, 100 per site, of
// every kind a user writes: exact pages (most of them), prefixes, globs,
// regexes and sums, over every kind of window.
func benchRules(sites int) []rules.Rule {
	windows := []string{"5m", "1h", "24h", "day", "week", "month", "all"}
	var rs []rules.Rule
	for s := 0; s < sites; s++ {
		site := fmt.Sprintf("site%d.example", s)
		for i := 0; i < 100; i++ {
			r := rules.Rule{
				Name: fmt.Sprintf("r%d-%d", s, i), Site: site, Window: rules.ParseWindow(windows[i%len(windows)]),
				Thresholds: rules.Thresholds{uint64(50 + 10*i)},
				Notify:     rules.Notify{Recipients: []string{"ops@example.com"}},
			}
			switch {
			case i < 70: // pages of every popularity: rank s+10k
				r.Path = fmt.Sprintf("/page/%d", s+10*(i*i))
			case i < 80:
				r.Match.Prefix = fmt.Sprintf("/page/%d", i-70+1)
			case i < 90:
				r.Match.Glob = "/page/*"
				r.Thresholds = rules.Thresholds{10_000, 100_000, 1_000_000}
			case i < 95:
				r.Match.Regex = fmt.Sprintf("/page/[0-9]*%d", i-90)
			default:
				r.Match.Glob = "/page/*"
				r.Aggregate = rules.Sum
				r.Thresholds = rules.Thresholds{1_000_000}
			}
			rs = append(rs, r)
		}
	}
	return rs
}

// BenchmarkSweep times whole sweeps (plan, count, judge, claim, hand on)
// of 1,000 rules over the per-minute counts of 5M hits on 100k pages, or
// the 100M with PAGEWATCH_BENCH_FULL=1. The history is sealed
// first and the first sweep fires what the data crosses; the timed ones
// are the steady state, one every 10 s of clock.
func BenchmarkSweep(b *testing.B) { benchmarkSweep(b, benchRules(10)) }

// BenchmarkSweepSpike is BenchmarkSweep with every third rule a spike
// rule (same_time over 7 days, as deploy/rules/spike-default.yaml), each
// over the pages of its site (prefix /page/).
func BenchmarkSweepSpike(b *testing.B) {
	rs := benchRules(10)
	for i := range rs {
		if i%3 != 0 {
			continue
		}
		r := &rs[i]
		*r = rules.Rule{Name: r.Name, Site: r.Site, Match: rules.Match{Prefix: "/page/"}, Window: rules.ParseWindow("1h"),
			Spike:  &rules.Spike{Factor: 4, MinCount: 60, Baseline: rules.Baseline{SameTime: &rules.SameTime{Days: 7}}},
			Rearm:  rules.Rearm{Hysteresis: 0.5, Settle: 24 * time.Hour},
			Notify: r.Notify}
	}
	benchmarkSweep(b, rs)
}

// BenchmarkSweepUnusual is BenchmarkSweep with every third rule the
// shipped unusual rule (both directions, its defaults), each over the
// pages of its site (prefix /page/): looking down, it observes every page
// with views in its 4 weeks, and reads the burst window with its own.
func BenchmarkSweepUnusual(b *testing.B) {
	rs := benchRules(10)
	for i := range rs {
		if i%3 != 0 {
			continue
		}
		r := &rs[i]
		*r = rules.Rule{Name: r.Name, Site: r.Site, Match: rules.Match{Prefix: "/page/"}, Window: rules.ParseWindow("1h"),
			Unusual: &rules.Unusual{Direction: rules.Both}, Escalate: []float64{4},
			NotifyOn: []rules.Event{rules.EventFire, rules.EventEscalate, rules.EventResolve}, Notify: r.Notify}
	}
	benchmarkSweep(b, rs)
}

// BenchmarkSweepShipped is a sweep of the shipped file alone
// (deploy/rules/spike-default.yaml: one two-sided unusual rule over every
// page of every site), the rule most users run: one observation per page
// with views in its 4 weeks, not one per rule and page as in
// BenchmarkSweepUnusual's 334 rules.
func BenchmarkSweepShipped(b *testing.B) {
	rs, _, err := readRulesFile("../../deploy/rules/spike-default.yaml")
	if err != nil {
		b.Fatal(err)
	}
	benchmarkSweep(b, rs)
}

func benchmarkSweep(b *testing.B, rs []rules.Rule) {
	hits, pages := 5_000_000, 100_000
	if os.Getenv("PAGEWATCH_BENCH_FULL") == "1" {
		hits = 100_000_000
	}
	// PAGEWATCH_BENCH_PAGES raises the page count; unless
	// PAGEWATCH_BENCH_HITS says otherwise, hits are then 10 a page (at
	// most 100M), so that most pages of the 1/rank tail have views.
	if v := benchEnvInt(b, "PAGEWATCH_BENCH_PAGES"); v > 0 {
		pages = v
		hits = max(hits, min(10*pages, 100_000_000))
	}
	if v := benchEnvInt(b, "PAGEWATCH_BENCH_HITS"); v > 0 {
		hits = v
	}
	// PAGEWATCH_BENCH_DAYS: the history's days (30; a page's trend reads
	// 35, so 36 or more have trends to read).
	days := 30
	if v := benchEnvInt(b, "PAGEWATCH_BENCH_DAYS"); v > 0 {
		days = v
	}
	logger := testenv.Logger(b)
	bs, _ := testenv.NATS(b, logger)
	c, srv := testenv.ClickHouse(b, logger)
	ctx := context.Background()
	end := time.Now().UTC().Truncate(time.Minute)
	began := time.Now()
	if err := c.GenerateSynthetic(ctx, clickhouse.Synthetic{Hits: hits, Pages: pages, Sites: 10, Days: days, Message: 5000, End: end}); err != nil {
		b.Fatal(err)
	}
	if _, err := c.WaitForMerges(ctx, 15*time.Minute); err != nil {
		b.Fatal(err)
	}
	generated := time.Since(began)
	// Seal the history first: a sweep seals within a budget, and a
	// backlog finished over the timed sweeps would be measured as theirs.
	began = time.Now()
	sealBefore := end.Add(-24*time.Hour - DefaultConfig().LagTolerance).Truncate(24 * time.Hour)
	if _, err := c.Counts().SealDays(ctx, sealBefore); err != nil {
		b.Fatal(err)
	}
	sealing := time.Since(began)
	began = time.Now()
	if _, err := c.Counts().SealHours(ctx, sealBefore); err != nil {
		b.Fatal(err)
	}
	sealingHours := time.Since(began)

	cfg := DefaultConfig()
	cfg.Rules = rs
	rs, err := LoadRules(cfg)
	if err != nil {
		b.Fatal(err)
	}
	timed := &timedCounter{Counter: c.Counts()}
	s, err := New(cfg, rs, Deps{Bus: bs, Counts: timed, History: c.History(), Logger: logger, Registry: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	clock := &clock{t: end}
	s.now = clock.now
	if err := s.startSync(ctx); err != nil {
		b.Fatal(err)
	}
	began = time.Now()
	if err := s.sweep(ctx, clock.now()); err != nil {
		b.Fatal(err)
	}
	first := time.Since(began)
	crossed := testMetricVecSum(s.metrics.crossings)
	b.Logf("%d hits on %d pages generated in %v, days sealed in %v, hours in %v; first sweep (%v crossings) %v", hits, pages, generated.Round(time.Second), sealing.Round(time.Second), sealingHours.Round(time.Second), crossed, first.Round(time.Millisecond))

	rowsBefore := testMetric(b, s.metrics.rows)
	timed.window, timed.calls, timed.starts = 0, 0, 0
	// PAGEWATCH_BENCH_STEADY_PROFILE names a file for a CPU profile of
	// the timed, steady sweeps alone (-cpuprofile has the first sweep
	// and the history's making too, which dwarf them).
	if path := os.Getenv("PAGEWATCH_BENCH_STEADY_PROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
		defer f.Close()
	}
	cpu0, chCPU0 := processCPU(), procstat.CPU(b, srv.PID())
	b.ResetTimer()
	for b.Loop() {
		clock.set(clock.now().Add(10 * time.Second))
		if err := s.sweep(ctx, clock.now()); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	pprof.StopCPUProfile() // none started: a no-op
	// CPU time is steadier than wall time on a shared machine: the
	// sweeper's (NATS runs in this process too, but a steady sweep
	// writes next to nothing) and the ClickHouse server's.
	b.ReportMetric((processCPU()-cpu0).Seconds()/float64(b.N), "sweeper-cpu-s/sweep")
	b.ReportMetric((procstat.CPU(b, srv.PID())-chCPU0).Seconds()/float64(b.N), "clickhouse-cpu-s/sweep")
	per := b.Elapsed() / time.Duration(b.N)

	b.ReportMetric(float64(per.Microseconds())/1000, "ms/sweep")
	b.ReportMetric(float64((timed.window/time.Duration(b.N)).Microseconds())/1000, "ms-counting/sweep")
	b.Logf("%d window queries of %d starts in all over %d sweeps", timed.calls, timed.starts, b.N)
	b.ReportMetric((testMetric(b, s.metrics.rows)-rowsBefore)/float64(b.N), "pages/sweep")
	b.ReportMetric(float64(first.Milliseconds()), "ms/first-sweep")
	// Every half hour the spike rules' baselines are read again: that
	// sweep is a steady one plus the reading. Moving the clock half an
	// hour would time a catch-up of 180 minutes too, so the cache is
	// emptied instead.
	s.baselines.mu.Lock()
	s.baselines.cache = nil
	s.baselines.mu.Unlock()
	clock.set(clock.now().Add(10 * time.Second))
	began = time.Now()
	if err := s.sweep(ctx, clock.now()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(time.Since(began).Milliseconds()), "ms/refresh-sweep")
	// The first sweep of a UTC day reads every page's trend and noise
	// too (trends.go): a refresh, one count query over 35 days and one
	// over 4 weeks of hours.
	s.baselines.mu.Lock()
	s.baselines.cache, s.baselines.trends = nil, nil
	s.baselines.mu.Unlock()
	clock.set(clock.now().Add(10 * time.Second))
	timed.window, timed.noise, timed.noisy = 0, 0, 0
	cpu0, chCPU0 = processCPU(), procstat.CPU(b, srv.PID())
	began = time.Now()
	if err := s.sweep(ctx, clock.now()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(time.Since(began).Milliseconds()), "ms/new-day-sweep")
	b.Logf("the new day's sweep: %v counting, %v reading %d pages' noise, sweeper %v CPU, ClickHouse %v CPU", timed.window.Round(time.Millisecond),
		timed.noise.Round(time.Millisecond), timed.noisy, (processCPU() - cpu0).Round(time.Millisecond), (procstat.CPU(b, srv.PID()) - chCPU0).Round(time.Millisecond))
}

// benchEnvInt is the positive integer in the environment variable name,
// or 0 when it is unset.
func benchEnvInt(b *testing.B, name string) int {
	v := os.Getenv(name)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

func testMetricVecSum(v *prometheus.CounterVec) float64 {
	ch := make(chan prometheus.Metric, 4096)
	go func() { v.Collect(ch); close(ch) }()
	var sum float64
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err == nil {
			sum += d.GetCounter().GetValue()
		}
	}
	return sum
}

// timedCounter adds up the time a sweep waits for WindowCounts: the
// query's share of a sweep, against the Go that judges its rows.
type timedCounter struct {
	Counter
	window time.Duration
	calls  int
	starts int
	noise  time.Duration // PageNoises
	noisy  int           // pages it returned
}

func (t *timedCounter) PageNoises(ctx context.Context, q traffic.NoiseQuery) ([]traffic.PageNoise, error) {
	began := time.Now()
	out, err := t.Counter.PageNoises(ctx, q)
	t.noise += time.Since(began)
	t.noisy += len(out)
	return out, err
}

func (t *timedCounter) WindowCounts(ctx context.Context, q traffic.WindowQuery) ([]traffic.PageCount, error) {
	began := time.Now()
	defer func() { t.window += time.Since(began); t.calls++; t.starts += len(q.Starts) }()
	return t.Counter.WindowCounts(ctx, q)
}

// processCPU is the CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
