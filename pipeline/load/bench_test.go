package load_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pagewatch/pagewatch/internal/realdata"
	"github.com/pagewatch/pagewatch/pipeline/hit"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
)

// BenchmarkJetStreamToClickHouse measures one loader moving 200,000 real
// hits (40 messages of 5,000, as ingest tail sends them) from JetStream
// into ClickHouse 18.16, until every row is counted.
func BenchmarkJetStreamToClickHouse(b *testing.B) {
	bb := setup(b)
	bb.cfg.BatchRows = 100_000
	bb.cfg.BatchAge = time.Second
	ctx := context.Background()
	if _, err := bb.bus.HitsStream(ctx); err != nil {
		b.Fatal(err)
	}
	var e logformat.Entry
	var msgs [][]byte
	var enc hit.Encoder
	for len(msgs) < 40 {
		for i, l := range realdata.Lines(b, realdata.ApacheLog) {
			if err := logformat.Parse(l, &e); err != nil {
				b.Fatal(err)
			}
			enc.Add(&hit.Hit{Time: e.Time, Site: "example.com", Path: string(e.Target), Method: string(e.Method),
				Status: uint16(e.Status), Referer: string(e.Referer), UserAgent: string(e.UserAgent), Offset: uint64(i)})
			if enc.Len() == 5000 {
				msgs = append(msgs, append([]byte(nil), enc.Bytes()...))
				enc.Reset()
			}
		}
	}
	msgs = msgs[:40]
	b.ResetTimer()
	start := time.Now()
	total := uint64(0)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for _, data := range msgs {
			m := nats.NewMsg(bb.bus.HitsSubject("bench", "f"))
			m.Data = data
			if _, err := bb.bus.JS.PublishMsg(ctx, m); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		total += uint64(len(msgs) * 5000)
		stop := bb.run(b, bb.ch)
		for {
			n, err := bb.ch.HitCount(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if n == total {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		stop()
	}
	b.ReportMetric(float64(total)/time.Since(start).Seconds(), "rows/s")
}
