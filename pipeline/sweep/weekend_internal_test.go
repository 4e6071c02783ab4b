package sweep

import (
	"context"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/internal/testenv"
)

// hoursCounter counts each hour of its sites' page /p as views says.
type hoursCounter struct {
	Counter
	start time.Time
	views func(h time.Time) uint64
}

func (c *hoursCounter) DataStarts(context.Context) (map[string]time.Time, error) {
	return map[string]time.Time{"a.example": c.start, "b.example": c.start}, nil
}

func (c *hoursCounter) WindowCounts(context.Context, traffic.WindowQuery) ([]traffic.PageCount, error) {
	return nil, nil
}

func (c *hoursCounter) PageNoises(context.Context, traffic.NoiseQuery) ([]traffic.PageNoise, error) {
	return nil, nil
}

func (c *hoursCounter) HourCounts(_ context.Context, q traffic.HourQuery, fn func(site, path string, hour time.Time, hits uint64)) error {
	seen := map[int64]bool{}
	for _, sp := range q.Spans {
		for h := sp.From; h.Before(sp.To); h = h.Add(time.Hour) {
			if !seen[h.Unix()] && !h.Before(c.start) {
				seen[h.Unix()] = true
				for _, site := range q.Sites {
					fn(site, "/p", h, c.views(h))
				}
			}
		}
	}
	return nil
}

// Rules on UTC's clocks and on Tokyo's read the same hours (Tokyo keeps
// no summer time), but a Friday 20:00 in UTC is a Saturday in Tokyo: a
// weekday's noise is read from weekdays, so the two make different
// normals of the same counts. The sweep once keyed normals by the hours
// alone and gave both rules (or both sites) whichever it made first.
// (Found by a review.)
func TestSweepMakesEachClocksOwnNormalOfTheSameHours(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name, zone, site string) rules.Rule {
		r := rules.Rule{Name: name, Site: site, Match: rules.Match{Prefix: "/"}, Window: rules.ParseWindow("1h"), Zone: zone,
			Unusual: &rules.Unusual{}, Notify: rules.Notify{Recipients: []string{"ops@example.com"}}}
		if err := r.Validate("r"); err != nil {
			t.Fatal(err)
		}
		return r
	}
	end := time.Date(2026, 6, 12, 20, 0, 0, 0, time.UTC) // Friday 20:00 UTC, Saturday 05:00 in Tokyo
	start := end.AddDate(0, 0, -10)                      // its second week: one weekly sample and its days
	levels := []float64{1.0, 0.88, 1.1, 0.95, 1.14, 0.92, 1.05}
	views := func(h time.Time) uint64 {
		l := h.In(tokyo)
		v := 1000 * levels[(l.YearDay()*3)%7]
		if wd := l.Weekday(); wd == time.Saturday || wd == time.Sunday {
			v *= 0.3
		}
		return uint64(v)
	}
	for name, rs := range map[string][]rules.Rule{
		"two rules of one site": {mk("utc", "UTC", "a.example"), mk("tokyo", "Asia/Tokyo", "a.example")},
		"two sites":             {mk("utc", "UTC", "a.example"), mk("tokyo", "Asia/Tokyo", "b.example")},
	} {
		t.Run(name, func(t *testing.T) {
			set := newRuleSet(rs)
			b := &baselines{counts: &hoursCounter{start: start, views: views}, seals: &sealing{}, logger: testenv.Logger(t)}
			obs := map[string][]observation{}
			for i, r := range set.rules {
				obs[r.Name] = []observation{{key: r.Name, pt: point{rule: i, at: end, from: end.Add(-time.Hour), to: end}, site: r.Site, path: "/p", count: 1000}}
			}
			if err := b.expect(context.Background(), set, obs, func(string) bool { return false }, end); err != nil {
				t.Fatal(err)
			}
			for _, r := range set.rules {
				spans := rules.SpansOn(r, end, start, nil)
				counts := make([]uint64, len(spans))
				for j, sp := range spans {
					for h := sp.From; h.Before(sp.To); h = h.Add(time.Hour) {
						counts[j] += views(h)
					}
				}
				want, got := r.Normal(spans, counts, rules.Trend{}), obs[r.Name][0].exp
				if got.Dispersion != want.Dispersion || got.High != want.High {
					t.Errorf("rule %s: the sweep's normal %.0f–%.0f (φ %.4f), its own spans' %.0f–%.0f (φ %.4f)",
						r.Name, got.Low, got.High, got.Dispersion, want.Low, want.High, want.Dispersion)
				}
			}
		})
	}
}
