package rules

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// trendDays is a page's views over the TrendDays days before today
// (days[0] yesterday): weekdays at base, weekends at 40 %, growing by
// growth a week, each day changed by change (i: days back).
func trendDays(base, growth float64, change func(i int) float64) []float64 {
	days := make([]float64, TrendDays)
	for i := range days {
		v := base * math.Pow(growth, -float64(i+1)/7)
		if i%7 == 2 || i%7 == 3 {
			v *= 0.4
		}
		days[i] = math.Round(v * change(i))
	}
	return days
}

func same(int) float64 { return 1 }

func TestPageTrendReadsASlowGrowth(t *testing.T) {
	for _, c := range []struct {
		name   string
		days   []float64
		weekly float64 // want, on the log scale
		ok     bool
	}{
		{"flat", trendDays(2000, 1, same), 0, true},
		{"9 % a week", trendDays(2000, 1.09, same), math.Log(1.09), true},
		{"falling 5 % a week", trendDays(2000, 0.95, same), math.Log(0.95), true},
		// Faster than a slow trend: followed only as far as maxTrend.
		{"50 % a week", trendDays(2000, 1.5, same), maxTrend, true},
		// A surge of a day, a holiday, a week-long drop: one odd day or
		// one odd week of five does not bend it.
		{"a day at 10 ×", trendDays(2000, 1, func(i int) float64 { return map[bool]float64{true: 10, false: 1}[i == 1] }), 0, true},
		{"last week at 25 %", trendDays(2000, 1, func(i int) float64 { return map[bool]float64{true: 0.25, false: 1}[i < 7] }), 0, true},
		{"gone for the last week", trendDays(2000, 1.09, func(i int) float64 { return map[bool]float64{true: 0, false: 1}[i < 7] }), math.Log(1.09), true},
		// Too few views a day to tell a level, or too few weeks.
		{"a small page", trendDays(60, 1.09, same), 0, false},
		{"20 days of history", trendDays(2000, 1.09, func(i int) float64 {
			return map[bool]float64{true: math.NaN(), false: 1}[i >= 20]
		}), 0, false},
	} {
		got := PageTrend(c.days)
		if got.OK != c.ok || math.Abs(got.Weekly-c.weekly) > 0.005 {
			t.Errorf("%s: trend %+v (%.3f a week), want %.3f (ok %v)", c.name, got, math.Exp(got.Weekly), math.Exp(c.weekly), c.ok)
		}
	}
}

// A page under TrendFloor views over its days has no trend, whatever
// their shape: a sweep need not read them. Drawn at random around the
// floor, with days unknown and days at 0, no page under it has one.
func TestTrendFloorIsNeverAbove(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	told := 0
	for range 200_000 {
		days := make([]float64, TrendDays)
		sum := 0.0
		for i := range days {
			switch u := rng.Float64(); {
			case u < 0.1:
				days[i] = math.NaN()
			case u < 0.4:
				days[i] = 0
			default:
				days[i] = math.Round(rng.Float64() * 2.5 * trendMinDay)
				sum += days[i]
			}
		}
		if PageTrend(days).OK {
			told++
			if sum < TrendFloor {
				t.Fatalf("a trend from %g views, under the floor %d: %v", sum, TrendFloor, days)
			}
		}
	}
	if told == 0 {
		t.Fatal("setup: no page drawn had a trend")
	}
}

func TestTrendCarriesWeeklySamplesForward(t *testing.T) {
	r := unusualRule(t, Unusual{})
	end := time.Date(2026, 3, 30, 12, 0, 0, 0, time.UTC)
	spans := r.BaselineSpans(end, time.Time{})
	counts := make([]uint64, len(spans))
	for i, sp := range spans {
		weeks := float64(sp.Tag%longSpan%nextHour) / 7
		counts[i] = uint64(math.Round(1000 * math.Pow(1.09, -weeks)))
	}
	flat := r.Normal(spans, counts, Trend{})
	grown := r.Normal(spans, counts, Trend{Weekly: math.Log(1.09), OK: true})
	if !flat.OK || !grown.OK || math.Abs(grown.Value-1000) > 1 || flat.Value > 830 {
		t.Errorf("normal %.0f as read, %.0f carried forward by 9 %% a week; want under 830, and 1000", flat.Value, grown.Value)
	}
	if grown.Dispersion >= flat.Dispersion {
		t.Errorf("φ %.4f carried forward, %.4f as read: a trend's spread is not noise", grown.Dispersion, flat.Dispersion)
	}
}

// A rule of more weeks than the trend is fitted to carries its older
// samples only as far as those weeks.
func TestTrendCarriesNoFurtherThanItWasFitted(t *testing.T) {
	tr := Trend{Weekly: math.Log(1.2), OK: true}
	if got, want := tr.scale(12), math.Pow(1.2, trendWeeks); math.Abs(got-want) > 1e-9 {
		t.Errorf("12 weeks back carried by %.2f, want %.2f (the %d weeks fitted)", got, want, trendWeeks)
	}
	if got := tr.scale(2); math.Abs(got-1.44) > 1e-9 {
		t.Errorf("2 weeks back carried by %.3f, want 1.44", got)
	}
}

// A trend is read as sure as the page's days allow: on a flat page whose
// days vary by 25 %, five weeks' levels read slopes of a few percent a
// week either way, which shrink draws towards 0; a page growing 9 % a
// week whose days vary by 5 % keeps its 9 %.
func TestPageTrendOfNoisyDaysIsShrunk(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		name          string
		growth, noise float64
		meanAbs       [2]float64 // the mean |weekly growth| read, within
		mean          [2]float64 // the mean weekly growth read, within
	}{
		{"flat, days varying by 25 %", 1, 0.25, [2]float64{0, 0.015}, [2]float64{-0.01, 0.01}},
		{"9 % a week, days varying by 5 %", 1.09, 0.05, [2]float64{0.075, 0.095}, [2]float64{0.075, 0.095}},
	} {
		const draws = 500
		var sum, sumAbs float64
		for range draws {
			tr := PageTrend(trendDays(2000, c.growth, func(int) float64 { return math.Exp(c.noise * rng.NormFloat64()) }))
			if !tr.OK {
				t.Fatalf("%s: no trend", c.name)
			}
			sum += tr.Weekly / draws
			sumAbs += math.Abs(tr.Weekly) / draws
		}
		if sumAbs < c.meanAbs[0] || sumAbs > c.meanAbs[1] || sum < c.mean[0] || sum > c.mean[1] {
			t.Errorf("%s: mean growth read %.4f, mean |growth| %.4f; want %v and %v", c.name, sum, sumAbs, c.mean, c.meanAbs)
		}
	}
}
