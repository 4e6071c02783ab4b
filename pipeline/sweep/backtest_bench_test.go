package sweep

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/rules"
)

// BenchmarkBacktestShipped replays the shipped rule (unusual, both
// directions) over 4 weeks of 200 pages' views per minute, a row for each
// minute with views (a few pages busy, most sparse: 376k rows), as
// `sweeper backtest --counts` does, and reports the CPU it takes per
// million rows: what a backtest of a big site costs, and what the
// console's Try a rule spends of its 20 s.
func BenchmarkBacktestShipped(b *testing.B) {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(3, 5))
	var sb strings.Builder
	sb.WriteString("timestamp,site,path,count\n")
	rows := 0
	for at := start; at.Before(start.Add(28 * 24 * time.Hour)); at = at.Add(time.Minute) {
		day := 0.3 + 0.7*float64(min(at.Hour(), 24-at.Hour()))/12 // a daily rhythm
		for p := range 200 {
			perHour := 3000 / float64((p+1)*(p+1)) * day // a few busy pages, a long tail
			if n := poisson(rng, perHour/60); n > 0 {
				fmt.Fprintf(&sb, "%s,example.com,/p%03d,%d\n", at.Format(time.RFC3339), p, n)
				rows++
			}
		}
	}
	csv := sb.String()
	rs, _, err := readRulesFile("../../deploy/rules/spike-default.yaml")
	if err == nil {
		err = rules.ValidateAll("rules", rs)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := processCPU()
	for range b.N {
		cf, err := ReadCounts(strings.NewReader(csv), "counts.csv")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Backtest(context.Background(), cf, rs, start.Add(7*24*time.Hour), cf.Last.Add(time.Minute), slog.New(slog.DiscardHandler)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((processCPU()-cpu0).Seconds()/float64(b.N)/float64(rows)*1e6, "cpu-s/1M-rows")
	b.ReportMetric(float64(rows), "rows")
}
