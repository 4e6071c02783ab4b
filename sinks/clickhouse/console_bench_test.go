package clickhouse

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/console"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// BenchmarkConsole times each console page and API call, whole (the
// handler, its ClickHouse reads and the rendering), over the sweep
// benchmark's load: 100k pages on 10 sites, 100M hits over 30 days with
// PAGEWATCH_BENCH_FULL=1 (5M otherwise), as page_minutes, sealed
// page_days and page_hours, and the raw hits themselves (the live view,
// referrers and the rules' short windows read them), plus 100k crossings
// with two outcomes each. It reports ms per call for each route; the
// live view's figure is its shared poll, made once per live_interval for
// every open browser. -benchtime 1x suffices (each run generates its load
// again): the timed pass follows an untimed one.
func BenchmarkConsole(b *testing.B) {
	hits := 5_000_000
	if os.Getenv("PAGEWATCH_BENCH_FULL") == "1" {
		hits = 100_000_000
	}
	c := openBench(b)
	ctx := context.Background()
	end := time.Now().UTC().Truncate(time.Minute)
	began := time.Now()
	if err := c.GenerateSynthetic(ctx, Synthetic{Hits: hits, Pages: benchPages, Sites: benchSites, Days: benchDays, Message: benchMessage, End: end}); err != nil {
		b.Fatal(err)
	}
	if err := generateRawHits(ctx, c, hits, end); err != nil {
		b.Fatal(err)
	}
	if err := generateHistory(ctx, c, 100_000, end); err != nil {
		b.Fatal(err)
	}
	if _, err := c.WaitForMerges(ctx, 30*time.Minute); err != nil {
		b.Fatal(err)
	}
	sealBefore := end.Truncate(24 * time.Hour)
	if _, err := c.Counts().SealDays(ctx, sealBefore); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Counts().SealHours(ctx, sealBefore); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d hits generated and sealed in %s", hits, time.Since(began).Round(time.Second))

	var rs []rules.Rule
	for i := 0; i < 1000; i++ {
		r := rules.Rule{Name: fmt.Sprintf("r%04d", i), Site: fmt.Sprintf("site%d.example", i%benchSites),
			Path: fmt.Sprintf("/page/%d", i), Thresholds: rules.Thresholds{1000}, Window: rules.ParseWindow([]string{"1h", "24h", "day", "week"}[i%4]),
			Notify: rules.Notify{Recipients: []string{"ops@example.com"}}}
		if err := r.Validate("bench"); err != nil {
			b.Fatal(err)
		}
		rs = append(rs, r)
	}
	cfg := console.DefaultConfig()
	cfg.Auth = console.AuthNone
	cfg.LiveInterval = time.Nanosecond // every live call polls: what is timed is the poll
	ts := &timedStore{Console: c.Console(), times: map[string]time.Duration{}, calls: map[string]int{}}
	srv, err := console.New(cfg, console.Deps{Store: ts, Rules: func() []rules.Rule { return rs },
		Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(), Now: func() time.Time { return end }})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	page := url.Values{"site": {"site1.example"}, "path": {"/page/1"}}.Encode()
	// The console serves auth: none to loopback names only.
	get := func(r string) *http.Request { return httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+r, nil) }
	routes := []string{
		"/live", "/live?site=site3.example", "/rules", "/rules?offset=500",
		"/page?" + page, "/page?" + page + "&range=24h", "/page?" + page + "&range=30d",
		"/history", "/history?site=site2.example&outcome=failed", "/history?offset=5000",
		"/api/v1/history?rule=r0001", "/pipeline",
	}
	// One pass first, as a console that has been up a while has done:
	// the live normal read (every 5 minutes) and the caches warm.
	for _, r := range routes {
		h.ServeHTTP(httptest.NewRecorder(), get(r))
	}
	for k := range ts.times {
		delete(ts.times, k)
		delete(ts.calls, k)
	}
	times := map[string]time.Duration{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, r := range routes {
			start := time.Now()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, get(r))
			times[r] += time.Since(start)
			if rec.Code != http.StatusOK {
				b.Fatalf("%s: %d\n%s", r, rec.Code, rec.Body.String())
			}
		}
	}
	b.StopTimer()
	names := make([]string, 0, len(times))
	for r := range times {
		names = append(names, r)
	}
	sort.Strings(names)
	for _, r := range names {
		ms := float64(times[r].Microseconds()) / 1000 / float64(b.N)
		fmt.Fprintf(os.Stderr, "console bench: %-60s %8.1f ms\n", r, ms)
		b.ReportMetric(ms, "ms/"+metricName(r))
	}
	for name, d := range ts.times {
		fmt.Fprintf(os.Stderr, "console bench: store %-14s %5d calls %8.1f ms each\n", name, ts.calls[name], float64(d.Microseconds())/1000/float64(ts.calls[name]))
	}
}

// timedStore times each of the console's reads.
type timedStore struct {
	Console
	mu    sync.Mutex // /rules and /page make their reads at once
	times map[string]time.Duration
	calls map[string]int
}

func (t *timedStore) since(name string, start time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.times[name] += time.Since(start)
	t.calls[name]++
}

func (t *timedStore) Live(ctx context.Context, q console.LiveQuery) ([]console.LivePage, error) {
	defer t.since("Live", time.Now())
	return t.Console.Live(ctx, q)
}

func (t *timedStore) DayTotals(ctx context.Context, sites, paths []string, from, to time.Time) ([]console.DayTotal, error) {
	defer t.since("DayTotals", time.Now())
	return t.Console.DayTotals(ctx, sites, paths, from, to)
}

func (t *timedStore) TopPages(ctx context.Context, site string, from, to time.Time, limit int) ([]console.PageViews, error) {
	defer t.since("TopPages"+to.Sub(from).String(), time.Now())
	return t.Console.TopPages(ctx, site, from, to, limit)
}

func (t *timedStore) PageCounts(ctx context.Context, sites, paths []string, from, to time.Time) ([]console.PageViews, error) {
	defer t.since("PageCounts"+to.Sub(from).String(), time.Now())
	return t.Console.PageCounts(ctx, sites, paths, from, to)
}

func (t *timedStore) Crossings(ctx context.Context, q console.HistoryQuery) ([]console.CrossingRow, error) {
	defer t.since("Crossings", time.Now())
	return t.Console.Crossings(ctx, q)
}

func (t *timedStore) LastFired(ctx context.Context, rules []string, since time.Time) ([]console.CrossingRow, error) {
	defer t.since("LastFired", time.Now())
	return t.Console.LastFired(ctx, rules, since)
}

func (t *timedStore) TopReferrers(ctx context.Context, site, path string, from, to time.Time, limit int) ([]traffic.Referrer, error) {
	defer t.since("TopReferrers", time.Now())
	return t.Console.TopReferrers(ctx, site, path, from, to, limit)
}

func (t *timedStore) PageSeries(ctx context.Context, site, path string, from, to time.Time) ([]traffic.MinuteHits, error) {
	defer t.since("PageSeries", time.Now())
	return t.Console.PageSeries(ctx, site, path, from, to)
}

func metricName(route string) string {
	return strings.NewReplacer("/", "_", "?", "_", "=", "-", "&", "_", ".", "", "%2F", "_").Replace(strings.TrimPrefix(route, "/"))
}

// generateRawHits writes the raw hits GenerateSynthetic leaves out: the
// same hit numbers on the same pages at the same times, with a referer
// from a handful, in chunks the server groups in memory.
func generateRawHits(ctx context.Context, c *Client, hits int, end time.Time) error {
	from := end.Unix() - int64(benchDays)*secondsPerDay
	for off := 0; off < hits; off += syntheticChunk {
		n := min(syntheticChunk, hits-off)
		q := fmt.Sprintf(`INSERT INTO hits (ts, site, path, referer, seq, line_offset)
SELECT toDateTime(%d + intDiv(number * %d, %d)), concat('site', toString(rank %% %d), '.example'), concat('/page/', toString(rank)),
    arrayElement(['-', 'https://www.google.com/', 'https://news.ycombinator.com/', 'https://t.co/x', 'https://site1.example/'], (intHash32(number) %% 5) + 1),
    intDiv(number, %d) + 1, number %% %d
FROM (SELECT number, toUInt32(floor(exp((intHash64(number) %% 1000000000) / 1e9 * log(%d)))) - 1 AS rank FROM numbers(%d, %d))`,
			from, int64(benchDays)*secondsPerDay, hits, benchSites, benchMessage, benchMessage, benchPages+1, off, n)
		if err := c.conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("generate raw hits %d+%d: %w", off, n, err)
		}
	}
	return nil
}

// generateHistory writes n crossings over the 30 days and two outcomes
// each (sent, or failed with 550).
func generateHistory(ctx context.Context, c *Client, n int, end time.Time) error {
	from := end.Unix() - int64(benchDays)*secondsPerDay
	cross := fmt.Sprintf(`INSERT INTO crossings (crossing_key, rule, site, path, window_text, threshold, hits, crossed_at)
SELECT concat('r', toString(number %% 1000), '.k.', toString(number)), concat('r', leftPad(toString(number %% 1000), 4, '0')),
    concat('site', toString(number %% %d), '.example'), concat('/page/', toString(number %% 1000)), '1h', 1000, 1000 + number %% 500,
    toDateTime(%d + intDiv(number * %d, %d))
FROM numbers(%d)`, benchSites, from, int64(benchDays)*secondsPerDay, n, n)
	if err := c.conn.Exec(ctx, cross); err != nil {
		// leftPad is newer than 18.16: name the rules without it.
		cross = strings.Replace(cross, "concat('r', leftPad(toString(number % 1000), 4, '0'))",
			"concat('r', substring(toString(10000 + number % 1000), 2))", 1)
		if err := c.conn.Exec(ctx, cross); err != nil {
			return fmt.Errorf("generate crossings: %w", err)
		}
	}
	outcomes := fmt.Sprintf(`INSERT INTO notifications (at, crossing_key, rule, site, path, outcome, smtp_code, error, worker)
SELECT toDateTime(%d + intDiv(intDiv(number, 2) * %d, %d) + number %% 2), concat('r', toString(intDiv(number, 2) %% 1000), '.k.', toString(intDiv(number, 2))),
    '', '', '', if(number %% 2 = 0, 'failed', 'sent'), if(number %% 2 = 0, 550, 0), '', 'w1'
FROM numbers(%d)`, from, int64(benchDays)*secondsPerDay, n, 2*n)
	if err := c.conn.Exec(ctx, outcomes); err != nil {
		return fmt.Errorf("generate notifications: %w", err)
	}
	return nil
}
