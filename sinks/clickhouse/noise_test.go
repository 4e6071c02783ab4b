package clickhouse_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// A page's noise computed in ClickHouse (PageNoises) is the one the
// backtest and the console compute from the same hours (rules.PageNoise),
// for 2, 3 and 4 weeks: pages steady, noisy, small, with hours missing
// (no row: 0 views) and with a surge; an hour stored twice (a sealed day
// sealed again) counts once; a site not asked for is not read.
func TestPageNoiseAgreesWithClickHouse(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(23, 1))
	from := time.Date(2025, 3, 3, 0, 0, 0, 0, time.UTC)
	pages := map[string]func(h int) float64{
		"/steady": func(h int) float64 { return float64(40 + rng.IntN(13)) },
		"/noisy": func(h int) float64 {
			return math.Round(60 * math.Exp(0.3*rng.NormFloat64()) * (1 + 0.5*math.Sin(float64(h%24)/24*2*math.Pi)))
		},
		"/small": func(h int) float64 { return float64(rng.IntN(6)) },
		"/gaps": func(h int) float64 {
			if rng.IntN(4) == 0 {
				return 0
			}
			return float64(15 + rng.IntN(30))
		},
		"/surge": func(h int) float64 {
			if h >= 500 && h < 530 {
				return 900
			}
			return float64(20 + rng.IntN(9))
		},
	}
	views := map[string]map[int64]float64{}
	var rows []string
	for _, site := range []string{"a.example", "other.example"} {
		for path, f := range pages {
			key := site + " " + path
			views[key] = map[int64]float64{}
			for h := range 4 * 7 * 24 {
				at := from.Add(time.Duration(h) * time.Hour)
				n := f(h)
				views[key][at.Unix()] = n
				if n > 0 {
					rows = append(rows, fmt.Sprintf("('%s', '%s', toDateTime(%d), %d, 1)", site, path, at.Unix(), int(n)))
				}
			}
		}
	}
	// Five hours read (multiples of rules.NoiseEvery into the last
	// week) sealed twice, first at 1 view, then at their own: the
	// later version counts (a part each: rows of one insert are merged
	// as it is written). More than the trim leaves out, so a read of
	// both versions shows.
	var first []string
	for i := range 5 {
		h := from.Add(time.Duration(3*7*24+7*(5+i)) * time.Hour)
		first = append(first, fmt.Sprintf("('a.example', '/steady', toDateTime(%d), 1, 0)", h.Unix()))
	}
	b.server.Query(t, "SYSTEM STOP MERGES pw_test.page_hours") // or the two parts may be one before the read
	b.server.Query(t, "INSERT INTO pw_test.page_hours (site, path, hour, hits, version) VALUES "+strings.Join(first, ", "))
	b.server.Query(t, "INSERT INTO pw_test.page_hours (site, path, hour, hits, version) VALUES "+strings.Join(rows, ", "))

	for _, weeks := range []int{2, 3, 4} {
		start := from.AddDate(0, 0, 7*(4-weeks))
		got, err := b.client.Counts().PageNoises(ctx, traffic.NoiseQuery{Sites: []string{"a.example"}, From: start, Weeks: weeks, Every: rules.NoiseEvery,
			MinMedian: rules.NoiseMinMedian, MinHours: rules.NoiseMinHours, TrimPercent: rules.NoiseTrimPercent, Bias: rules.NoiseBias(weeks)})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]float64{}
		for _, n := range got {
			if n.Site != "a.example" {
				t.Errorf("%d weeks: a page of %s, not asked for", weeks, n.Site)
			}
			seen[n.Path] = n.Noise
		}
		for path := range pages {
			v := views["a.example "+path]
			want, ok := rules.PageNoise(rules.HourSlots(start, weeks, func(h time.Time) float64 { return v[h.Unix()] }))
			g, read := seen[path]
			switch {
			case ok != read:
				t.Errorf("%d weeks: %s read %v (%v), want read %v (%v)", weeks, path, read, g, ok, want)
			case ok && math.Abs(g-want) > 1e-9*math.Max(want, 1e-3):
				t.Errorf("%d weeks: %s noise %v, want %v", weeks, path, g, want)
			}
		}
		if _, ok := seen["/steady"]; !ok {
			t.Errorf("%d weeks: no noise for the steady page: %v", weeks, got)
		}
		if _, ok := seen["/small"]; ok {
			t.Errorf("%d weeks: a noise for the small page, whose hours are all under %v", weeks, rules.NoiseMinMedian)
		}
	}
}
