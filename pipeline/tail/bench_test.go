package tail_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/pipeline/tail"
)

// BenchmarkTailToJetStream measures ingest tail end to end within one
// process: read, parse, encode and publish (with JetStream acks, file
// store) 200,000 real log lines.
func BenchmarkTailToJetStream(b *testing.B) {
	bb := setup(b)
	bb.cfg.BatchLines = 5000
	var all [][]byte
	for len(all) < 200_000 {
		all = append(all, bb.lines...)
	}
	appendLines(b, bb.log, all)
	st, err := os.Stat(bb.log)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	stream, err := bb.bus.HitsStream(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		// Each round is a new tailer instance reading the file from the start.
		bb.cfg.Instance = "bench" + strconv.Itoa(i)
		stop := bb.start(b)
		for {
			info, err := stream.Info(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if info.State.LastSeq > 0 {
				m, err := stream.GetMsg(ctx, info.State.LastSeq)
				if err == nil && m.Header.Get(tail.HeaderEnd) == strconv.FormatInt(st.Size(), 10) &&
					m.Subject == bb.bus.HitsSubject(bb.cfg.Instance, m.Subject[len(m.Subject)-24:]) {
					break
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		stop()
	}
	elapsed := time.Since(start).Seconds()
	b.ReportMetric(float64(b.N*len(all))/elapsed, "lines/s")
	b.ReportMetric(float64(b.N)*float64(st.Size())/elapsed/1e6, "MB/s")
}
