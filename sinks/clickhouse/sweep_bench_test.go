package clickhouse

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
)

// The sweep's load, as the issue states it: 100k pages on 10 sites,
// Zipf-like popularity, 100M hits over 30 days in messages of 5,000.
const (
	benchPages   = 100_000
	benchSites   = 10
	benchDays    = 30
	benchMessage = 5_000 // hits per JetStream message
)

// BenchmarkSweepCounts times one sweep's read, WindowCounts over seven
// windows, on the page_minutes and loaded_days rows of 5M hits, or of the
// issue's 100M with PAGEWATCH_BENCH_FULL=1 (about ten minutes on the 2-core
// machine: most of it generating and merging 60M rows). The rows are made
// by the server from system.numbers, as the loader would have written
// them, and the days before End's are sealed first.
func BenchmarkSweepCounts(b *testing.B) {
	hits := 5_000_000
	if os.Getenv("PAGEWATCH_BENCH_FULL") == "1" {
		hits = 100_000_000
	}
	c := openBench(b)
	ctx := context.Background()
	end := time.Date(2025, 3, 28, 15, 0, 0, 0, time.UTC) // a Friday afternoon
	b.Logf("load average before: %s", loadAverage())

	began := time.Now()
	if err := c.GenerateSynthetic(ctx, Synthetic{Hits: hits, Pages: benchPages, Sites: benchSites, Days: benchDays, Message: benchMessage, End: end}); err != nil {
		b.Fatal(err)
	}
	generated := time.Since(began)
	began = time.Now()
	if done, err := c.WaitForMerges(ctx, 15*time.Minute); err != nil {
		b.Fatal(err)
	} else if !done {
		b.Logf("merges still running after 15 min")
	}
	merged := time.Since(began)
	began = time.Now()
	sealed, err := c.Counts().SealDays(ctx, end)
	if err != nil {
		b.Fatal(err)
	}
	sealing := time.Since(began)
	// What every later sweep pays when no day changed.
	began = time.Now()
	if n, err := c.Counts().SealDays(ctx, end); err != nil || n != 0 {
		b.Fatalf("sealing again: %d days, %v", n, err)
	}
	resealing := time.Since(began)
	b.Logf("%d hits: generated in %v, merged in a further %v, %d days sealed in %v, nothing to seal found in %v; %s",
		hits, generated.Round(time.Second), merged.Round(time.Second), sealed, sealing.Round(time.Millisecond),
		resealing.Round(time.Millisecond), tableSizes(b, c))

	today := end.Truncate(24 * time.Hour)
	q := traffic.WindowQuery{
		Starts: []time.Time{
			end.Add(-5 * time.Minute), end.Add(-time.Hour), end.Add(-24 * time.Hour),
			today, today.AddDate(0, 0, -4), time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), {},
		},
		End: end, SealedBefore: end, Floor: 100,
	}
	var read atomic.Uint64 // rows the server read, from its progress packets
	qctx := ch.Context(ctx, ch.WithProgress(func(p *ch.Progress) { read.Add(p.Rows) }))
	var pages int
	b.ResetTimer()
	for b.Loop() {
		got, err := c.Counts().WindowCounts(qctx, q)
		if err != nil {
			b.Fatal(err)
		}
		pages = len(got)
	}
	b.StopTimer()
	perSweep := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(perSweep.Microseconds())/1000, "ms/sweep")
	b.ReportMetric(float64(pages), "pages/sweep")
	b.ReportMetric(float64(read.Load())/float64(b.N), "rows-read/sweep")
	b.Logf("load average after: %s", loadAverage())
}

func openBench(b *testing.B) *Client {
	b.Helper()
	srv := clickhousetest.Start(b)
	cfg := DefaultConfig()
	cfg.Addr = []string{srv.Addr}
	cfg.Database = "pw_bench"
	c, err := Open(context.Background(), cfg, slog.New(slog.NewTextHandler(b.Output(), nil)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if _, err := c.Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	return c
}

// tableSizes describes the sweep's tables: rows and active parts.
func tableSizes(b *testing.B, c *Client) string {
	b.Helper()
	rows, err := c.conn.Query(context.Background(), `SELECT table, sum(rows), count() FROM system.parts
WHERE database = currentDatabase() AND active AND table IN ('page_minutes', 'loaded_days', 'page_days')
GROUP BY table ORDER BY table`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var (
			table    string
			n, parts uint64
		)
		if err := rows.Scan(&table, &n, &parts); err != nil {
			b.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %d rows in %d parts", table, n, parts))
	}
	return strings.Join(out, ", ")
}

// loadAverage is the machine's, for reading the figures: other test
// suites often share it.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}
