package clickhouse_test

import (
	"context"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/realdata"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
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
			Status: uint16(e.Status), Referer: string(e.Referer), UserAgent: string(e.UserAgent), Offset: uint64(i)})
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
		if err := bb.client.InsertHits(ctx, batches()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*10*len(base))/time.Since(start).Seconds(), "rows/s")
}
