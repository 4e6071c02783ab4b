package rules

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkMatches runs 1,000 rules of every kind over 100,000 real-shaped
// paths: one iteration is one path against every rule, as a sweep that
// asks "which rules watch this page" would.
func BenchmarkMatches(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	rules := make([]Rule, 1000)
	for i := range rules {
		var m Match
		switch i % 4 {
		case 0:
			m = Match{Exact: fmt.Sprintf("/blog/post-%d", i)}
		case 1:
			m = Match{Prefix: fmt.Sprintf("/docs/v%d/", i%50)}
		case 2:
			m = Match{Glob: fmt.Sprintf("/shop/%d/**/*.html", i%100)}
		case 3:
			m = Match{Regex: fmt.Sprintf(`/api/v%d/[a-z]+/\d+`, i%10)}
		}
		rules[i] = Rule{Name: fmt.Sprintf("r%d", i), Site: "example.com", Match: m, Thresholds: Thresholds{1000},
			Window: ParseWindow("1h"), Notify: Notify{Recipients: []string{"a@example.com"}}}
	}
	if err := ValidateAll("sweeper.rules", rules); err != nil {
		b.Fatal(err)
	}
	paths := make([]string, 100_000)
	for i := range paths {
		switch rng.IntN(4) {
		case 0:
			paths[i] = fmt.Sprintf("/blog/post-%d", rng.IntN(2000))
		case 1:
			paths[i] = fmt.Sprintf("/docs/v%d/guide/%d", rng.IntN(60), rng.IntN(100))
		case 2:
			paths[i] = fmt.Sprintf("/shop/%d/c/%d/item-%d.html", rng.IntN(120), rng.IntN(10), rng.IntN(1000))
		case 3:
			paths[i] = fmt.Sprintf("/api/v%d/users/%d", rng.IntN(12), rng.IntN(100000))
		}
	}
	matched := 0
	for i := 0; b.Loop(); i++ {
		p := paths[i%len(paths)]
		for j := range rules {
			if rules[j].Matches("example.com", p) {
				matched++
			}
		}
	}
	n := float64(b.N) * float64(len(rules))
	b.ReportMetric(b.Elapsed().Seconds()*1e9/n, "ns/match")
	b.ReportMetric(n/b.Elapsed().Seconds(), "matches/s")
	b.ReportMetric(float64(matched)/float64(b.N), "rules-hit/path")
}

// BenchmarkUnusualNormal makes one page's normal for the shipped unusual
// rule from its 50 spans (a window ending mid-hour: 6 days and 4 weeks,
// each at the hour before and after, each again for a drop's 3 hours,
// and at the hour after those for a burst's climb), as a sweep does for
// every page it reads at each half hour: a million pages make a million
// of these.
func BenchmarkUnusualNormal(b *testing.B) {
	r := unusualRule(b, Unusual{})
	end := monday.Add(5*7*24*time.Hour + 14*time.Hour + 10*time.Minute)
	spans := r.BaselineSpans(end, monday)
	if len(spans) != 50 {
		b.Fatalf("%d spans, want 50", len(spans))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	counts := make([]uint64, len(spans))
	for i := range counts {
		counts[i] = 100 + rng.Uint64N(50)
	}
	b.ReportAllocs()
	for b.Loop() {
		if e := r.Normal(spans, counts, Trend{}); !e.OK {
			b.Fatal("no normal")
		}
	}
}

// BenchmarkBurstBound is the bound of a page at nothing between its
// bursts, judged at every sweep of such a page: 16 bursts remembered.
func BenchmarkBurstBound(b *testing.B) {
	at := time.Date(2026, 3, 30, 0, 0, 0, 0, time.UTC)
	var bursts []Burst
	for i := range maxBursts {
		bursts = append(bursts, Burst{At: at.Add(-time.Duration(maxBursts-i) * 40 * time.Hour), Count: uint64(300 + 37*i%150)})
	}
	b.ReportAllocs()
	for b.Loop() {
		burstBound(bursts, at.Add(-pastSpan), time.Time{}, 1, 1.5)
	}
}
