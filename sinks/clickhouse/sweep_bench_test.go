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

	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
)

// The sweep's load, as the issue states it: 100k pages on 10 sites,
// Zipf-like popularity, 100M hits over 30 days in messages of 5,000.
const (
	benchPages   = 100_000
	benchSites   = 10
	benchDays    = 30
	benchMessage = 5_000 // hits per JetStream message
	// benchChunk hits are generated per statement: each is grouped into
	// page-minute rows in memory, so chunks bound the server's memory.
	// numbers(offset, count) is system.numbers from offset on.
	benchChunk = 10_000_000
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
	generateMinutes(b, c, hits, end)
	generated := time.Since(began)
	began = time.Now()
	waitForMerges(b, c)
	merged := time.Since(began)
	began = time.Now()
	sealed, err := c.SealDays(ctx, end)
	if err != nil {
		b.Fatal(err)
	}
	sealing := time.Since(began)
	// What every later sweep pays when no day changed.
	began = time.Now()
	if n, err := c.SealDays(ctx, end); err != nil || n != 0 {
		b.Fatalf("sealing again: %d days, %v", n, err)
	}
	resealing := time.Since(began)
	b.Logf("%d hits: generated in %v, merged in a further %v, %d days sealed in %v, nothing to seal found in %v; %s",
		hits, generated.Round(time.Second), merged.Round(time.Second), sealed, sealing.Round(time.Millisecond),
		resealing.Round(time.Millisecond), tableSizes(b, c))

	today := end.Truncate(24 * time.Hour)
	q := WindowQuery{
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
		got, err := c.WindowCounts(qctx, q)
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

// generateMinutes writes what the loader would have written for hits
// spread evenly over the benchDays before end: hit n is at
// end - benchDays + n*(benchDays/hits), in message n/benchMessage+1, on the
// page of rank floor((benchPages+1)^u) - 1 for a hash u of n in [0, 1),
// which is popularity 1/rank (Zipf with exponent 1). A page-minute row
// counts one message's hits of one page in one minute.
func generateMinutes(b *testing.B, c *Client, hits int, end time.Time) {
	b.Helper()
	from := end.Unix() - benchDays*secondsPerDay
	// 18.16 only takes integer settings, as Go ints.
	ctx := ch.Context(context.Background(), ch.WithSettings(ch.Settings{"max_memory_usage": 8_000_000_000}))
	for off := 0; off < hits; off += benchChunk {
		n := min(benchChunk, hits-off)
		numbers := fmt.Sprintf(`SELECT toUInt32(floor(exp((intHash64(number) %% 1000000000) / 1e9 * log(%d)))) - 1 AS rank,
        intDiv(%d + intDiv(number * %d, %d), 60) * 60 AS m,
        intDiv(number, %d) + 1 AS s
    FROM numbers(%d, %d)`,
			benchPages+1, from, benchDays*secondsPerDay, hits, benchMessage, off, n)
		minutes := insertPageMinutes + fmt.Sprintf(`
SELECT concat('site', toString(rank %% %d), '.example'), concat('/page/', toString(rank)), toDateTime(m), s, count()
FROM (%s)
GROUP BY rank, m, s`, benchSites, numbers)
		if err := c.conn.Exec(ctx, minutes); err != nil {
			b.Fatalf("generate page_minutes of hits %d+%d: %v", off, n, err)
		}
		days := insertLoadedDays + fmt.Sprintf(`
SELECT DISTINCT toDate(toDateTime(m), 'UTC'), s FROM (%s)`, numbers)
		if err := c.conn.Exec(ctx, days); err != nil {
			b.Fatalf("generate loaded_days of hits %d+%d: %v", off, n, err)
		}
	}
}

// waitForMerges waits until the server has merged what it wants to, as
// it would have long before a sweep on a live system, for up to 15 min.
func waitForMerges(b *testing.B, c *Client) {
	b.Helper()
	deadline := time.Now().Add(15 * time.Minute)
	for time.Now().Before(deadline) {
		var n uint64
		if err := c.conn.QueryRow(context.Background(), "SELECT count() FROM system.merges WHERE database = currentDatabase()").Scan(&n); err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			return
		}
		time.Sleep(time.Second)
	}
	b.Logf("merges still running after 15 min")
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
