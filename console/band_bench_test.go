package console

import (
	"context"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// BenchmarkPageBand is the band of a page's week at 15-minute steps
// (672 points) under a rule looking both ways, from 5 weeks of hours:
// CPU time per band, which a page view of the console pays.
func BenchmarkPageBand(b *testing.B) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	var hours []traffic.MinuteHits
	for h := now.Add(-42 * 24 * time.Hour); h.Before(now); h = h.Add(time.Hour) {
		hours = append(hours, traffic.MinuteHits{Minute: h, Hits: uint64(100 + 50*(h.Hour()%7))})
	}
	r := rules.Rule{Name: "unusual", Match: rules.Match{Prefix: "/"}, Window: rules.ParseWindow("1h"),
		Unusual: &rules.Unusual{}, Notify: rules.Notify{Recipients: []string{"a@example.com"}}}
	if err := r.Validate("rules"); err != nil {
		b.Fatal(err)
	}
	st := &fakeStore{series: hours}
	p := &pagePages{&frame{deps: Deps{Store: st, Now: time.Now, Rules: func() []rules.Rule { return []rules.Rule{r} }}, starts: newSiteStarts(st, time.Now)}}
	from := now.Add(-7 * 24 * time.Hour)
	b.ResetTimer()
	for range b.N {
		band, err := p.pageBand(context.Background(), "example.com", "/", from, now, 15*time.Minute)
		if err != nil || band == nil || len(band.Points) != 672 {
			b.Fatalf("band %v, %v", band, err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)*1000, "ms/band")
}
