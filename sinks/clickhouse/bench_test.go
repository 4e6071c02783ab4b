package clickhouse_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/procstat"
	"github.com/pagewatch/pagewatch/internal/realdata"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
)

// BenchmarkInsertHits loads batches of 100k real hits (10 JetStream-sized
// messages of 10k) into ClickHouse 18.16: raw rows and per-minute counts.
func BenchmarkInsertHits(b *testing.B) {
	bb := setup(b)
	lines := realdata.Lines(b, realdata.ApacheLog)
	var e logformat.Entry
	base := make([]hit.Hit, 0, len(lines))
	for i, l := range lines {
		if err := logformat.Parse(l, &e); err != nil {
			b.Fatal(err)
		}
		base = append(base, hit.Hit{Time: e.Time, Site: "example.com", Path: string(e.Target), Method: string(e.Method),
			Status: uint16(e.Status), Referer: string(e.Referer), Offset: uint64(i)})
	}
	seq := uint64(0)
	batches := func() []hit.Batch {
		out := make([]hit.Batch, 10)
		for i := range out {
			seq++
			out[i] = hit.Batch{Seq: seq, Hits: base}
		}
		return out
	}
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := bb.client.Hits().InsertHits(ctx, batches()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*10*len(base))/time.Since(start).Seconds(), "rows/s")
}

// BenchmarkInsertMerges is what ClickHouse 18.16 spends on 10M real-shaped
// hits of one day inserted over HTTP in batches of a given size, merges
// included: the CPU time of clickhouse-server from the first insert until
// no merge has run for 2 s, per million rows (PAGEWATCH_BENCH_HTTP_COMPRESSION:
// lz4 or none).
func BenchmarkInsertMerges(b *testing.B) {
	for _, rows := range []int{100_000, 300_000, 1_000_000} {
		b.Run(fmt.Sprintf("batch=%d", rows), func(b *testing.B) { benchInsertMerges(b, rows, 10_000_000) })
	}
}

func benchInsertMerges(b *testing.B, batchRows, total int) {
	srv := clickhousetest.Start(b)
	cfg := clickhouse.DefaultConfig()
	cfg.Addr, cfg.HTTPAddr = []string{srv.Addr}, []string{srv.HTTPAddr}
	if v := os.Getenv("PAGEWATCH_BENCH_HTTP_COMPRESSION"); v != "" {
		cfg.HTTPCompression = v
	}
	ctx := context.Background()
	c, err := clickhouse.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	pid := srv.PID()
	lines := realdata.Lines(b, realdata.ApacheLog)
	var e logformat.Entry
	var enc hit.Encoder
	day := time.Now().UTC().Truncate(24 * time.Hour)
	// Messages of 5,000 hits, 500,000 hits a second from 01:00.
	var msgs [][]byte
	for i := range total {
		if err := logformat.Parse(lines[i%len(lines)], &e); err != nil {
			b.Fatal(err)
		}
		enc.Add(&hit.Hit{Time: day.Add(time.Hour + time.Duration(i)*2*time.Microsecond), Site: "example.com",
			Path: string(e.Target), Method: string(e.Method), Status: uint16(e.Status), Referer: string(e.Referer), Offset: uint64(i) * 200})
		if enc.Len() == 5000 {
			msgs = append(msgs, slices.Clone(enc.Bytes()))
			enc.Reset()
		}
	}
	b.ResetTimer()
	for n := range b.N {
		cpu0, start := procstat.CPU(b, pid), time.Now()
		var batches []hit.Batch
		for i, m := range msgs {
			lean := new(hit.Lean)
			if err := hit.DecodeLean(m, lean); err != nil {
				b.Fatal(err)
			}
			batches = append(batches, hit.Batch{Seq: uint64(n*len(msgs) + i + 1), Key: uint64(n*len(msgs)+i) | 1<<63, LineKey: uint64(n+1) | 1<<63, Lean: lean})
			if len(batches)*5000 >= batchRows || i == len(msgs)-1 {
				if err := c.Hits().InsertHits(ctx, batches); err != nil {
					b.Fatal(err)
				}
				batches = nil
			}
		}
		inserted := procstat.CPU(b, pid) - cpu0
		insertWall := time.Since(start)
		var quiet time.Time
		for ; ; time.Sleep(100 * time.Millisecond) {
			if strings.TrimSpace(srv.Query(b, "SELECT count() FROM system.merges")) != "0" {
				quiet = time.Time{}
				continue
			}
			if quiet.IsZero() {
				quiet = time.Now()
			} else if time.Since(quiet) > 2*time.Second {
				break
			}
		}
		all := procstat.CPU(b, pid) - cpu0
		parts := strings.TrimSpace(srv.Query(b, "SELECT count() FROM system.parts WHERE active AND table = 'hits'"))
		b.Logf("ClickHouse CPU: %s inserting (%s wall), %s with merges; %s active parts of hits", inserted.Round(10*time.Millisecond), insertWall.Round(10*time.Millisecond), all.Round(10*time.Millisecond), parts)
		// Every row once, counted as the e2e benchmark counts them.
		distinct := 0
		for k := range 8 {
			out := strings.TrimSpace(srv.Query(b, fmt.Sprintf("SELECT count() FROM (SELECT seq, line_offset FROM pagewatch.hits WHERE intHash64(line_offset) %% 8 = %d GROUP BY seq, line_offset)", k)))
			c, err := strconv.Atoi(out)
			if err != nil {
				b.Fatalf("count: %q", out)
			}
			distinct += c
		}
		if distinct != total*(n+1) {
			b.Fatalf("%d distinct hits, want %d", distinct, total*(n+1))
		}
		b.ReportMetric(inserted.Seconds()/(float64(total)/1e6), "ch-insert-cpu-s/Mrows")
		b.ReportMetric(all.Seconds()/(float64(total)/1e6), "ch-cpu-s/Mrows")
		b.ReportMetric(float64(total)/insertWall.Seconds(), "rows/s")
	}
}
