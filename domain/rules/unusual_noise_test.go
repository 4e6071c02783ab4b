package rules

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// noisyHours is a page's hours over weeks weeks by hour of the week, as
// HourSlots reads them (every NoiseEvery-th): a daily rhythm about base,
// each hour's mean changed by a factor of spread (log-normal) beyond
// Poisson's noise, and by change(k, w) (k: the hour of the week).
func noisyHours(rng *rand.Rand, weeks int, base, spread float64, change func(k, w int) float64) [][]float64 {
	slots := make([][]float64, 7*24/NoiseEvery)
	for j := range slots {
		k := j * NoiseEvery
		day := 0.5 + 0.5*math.Sin(float64(k%24)/24*2*math.Pi)
		for w := range weeks {
			mu := base * (0.2 + day) * math.Exp(spread*rng.NormFloat64()-spread*spread/2) * change(k, w)
			slots[j] = append(slots[j], float64(poisson(rng, mu)))
		}
	}
	return slots
}

func unchanged(int, int) float64 { return 1 }

// A page's own noise reads how much its hours vary beyond Poisson's:
// over 200 pages each, a steady page near none, and one whose hours vary
// by 15 % or 30 % at 0.6 to 0.9 of its φ (the trimmed mean's shortfall,
// PageNoise), from 2 weeks or 4. A surge of 6 hours at 10 × moves it
// by under a tenth, a holiday of a day by under two fifths; a small
// page and a page busy for 20 hours a week say nothing.
func TestPageNoiseReadsHowMuchAPageVaries(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	// mean is the mean noise of 200 pages, and whether every page read
	// one (all) and whether any did.
	type reading struct {
		mean     float64
		all, any bool
	}
	read := func(weeks int, base, spread float64, change func(k, w int) float64) reading {
		r := reading{all: true}
		for range 200 {
			phi, ok := PageNoise(noisyHours(rng, weeks, base, spread, change))
			r.mean += phi / 200
			r.all, r.any = r.all && ok, r.any || ok
		}
		return r
	}
	mean := func(weeks int, base, spread float64, change func(k, w int) float64) (float64, bool) {
		r := read(weeks, base, spread, change)
		return r.mean, r.all
	}
	truth := func(spread float64) float64 { return math.Exp(spread*spread) - 1 }
	if phi, ok := mean(4, 200, 0, unchanged); !ok || phi > 0.002 {
		t.Errorf("a steady page: noise %.4f (read %v), want near 0", phi, ok)
	}
	plain := map[float64]float64{}
	for _, weeks := range []int{2, 4} {
		for _, spread := range []float64{0.15, 0.3} {
			phi, ok := mean(weeks, 200, spread, unchanged)
			if r := phi / truth(spread); !ok || r < 0.6 || r > 0.9 {
				t.Errorf("%d weeks of hours varying by %.0f %%: noise %.4f, %.2f of its φ (read %v); want 0.6 to 0.9", weeks, 100*spread, phi, r, ok)
			}
			if weeks == 4 {
				plain[spread] = phi
			}
		}
	}
	for _, c := range []struct {
		name   string
		change func(k, w int) float64
		within float64
	}{
		{"a surge of 6 hours at 10 ×", func(k, w int) float64 { return map[bool]float64{true: 10, false: 1}[w == 1 && k >= 30 && k < 36] }, 0.1},
		// A day is 3 of the 24 hours read, more than the trim's 2: each
		// has one sample of 4 far off, which their MAD does not quite
		// ignore.
		{"a holiday at 25 %", func(k, w int) float64 { return map[bool]float64{true: 0.25, false: 1}[w == 2 && k >= 72 && k < 96] }, 0.4},
	} {
		if phi, _ := mean(4, 200, 0.15, c.change); math.Abs(phi-plain[0.15]) > c.within*plain[0.15] {
			t.Errorf("%s: noise %.4f, %.4f without: want within %.0f %%", c.name, phi, plain[0.15], 100*c.within)
		}
	}
	if read(4, 6, 0.3, unchanged).any {
		t.Error("a page of a few views an hour: a noise read, want none")
	}
	if read(4, 200, 0.15, func(k, _ int) float64 { return map[bool]float64{true: 1, false: 0.01}[k < 20] }).any {
		t.Error("a page busy 20 hours a week: a noise read, want none")
	}
}

// NoiseHours reads whole weeks ending where the trend's days end, as
// many as the site's data covers, and none under two.
func TestNoiseHoursEndWithTheTrendsDays(t *testing.T) {
	end := time.Date(2026, 3, 20, 14, 10, 0, 0, time.UTC)
	to := TrendFrom(end).AddDate(0, 0, TrendDays)
	if want := time.Date(2026, 3, 18, 0, 0, 0, 0, time.UTC); !to.Equal(want) {
		t.Fatalf("the trend's days end at %s, want %s", to, want)
	}
	for _, c := range []struct {
		start time.Time
		weeks int
	}{
		{time.Time{}, 4},
		{to.AddDate(0, 0, -60), 4},
		{to.AddDate(0, 0, -21), 3},
		{to.AddDate(0, 0, -20), 2},
		{to.AddDate(0, 0, -13), 0},
	} {
		from, weeks := NoiseHours(end, c.start)
		if weeks != c.weeks || (weeks > 0 && !from.Equal(to.AddDate(0, 0, -7*weeks))) {
			t.Errorf("data from %s: %d weeks from %s, want %d ending %s", c.start, weeks, from, c.weeks, to)
		}
	}
}

// The page's own noise is what an hour's few samples are shrunk
// towards: 4 alike samples of a page whose hours vary by 30 % give a
// range as wide as the page is noisy, not as the 4 say; of a page whose
// hours barely vary, a narrower one than the prior every page starts
// from (never narrower than noiseFloor's).
func TestAPagesNoiseWidensOrNarrowsItsRange(t *testing.T) {
	d := unusualRule(t, Unusual{}).Detector().(*unusualDetector)
	alike := []float64{100, 102, 98, 101}
	width := func(tr Trend) float64 {
		var h hourSamples
		h.trend = tr
		for i, x := range alike {
			h.add(7*(i+1), uint64(x), false)
		}
		e := d.expectHour(&h)
		return (e.High - e.Low) / e.Value
	}
	prior, noisy, steady := width(Trend{}), width(Trend{Noise: 0.09, NoiseOK: true}), width(Trend{Noise: 0.001, NoiseOK: true})
	if !(noisy > prior && steady < prior) {
		t.Errorf("range widths: the prior's %.3f, a noisy page's %.3f, a steady page's %.3f: want noisy > prior > steady", prior, noisy, steady)
	}
	if floor := width(Trend{Noise: noiseFloor, NoiseOK: true}); steady != floor {
		t.Errorf("a page steadier than the floor: width %.3f, the floor's %.3f", steady, floor)
	}
}
