package rules

import (
	"math"
	"slices"
	"time"
)

// A page's own noise. An hour's normal reads the page's overdispersion φ
// from that hour's few samples (4 weeks of one hour), shrunk towards a
// prior. The prior was one figure for every page (0.04: a 20 % spread
// between like hours), and 4 samples cannot say much against it: a page
// whose hours vary by 30 % was judged as one of 20 %, and fired on its
// noise, and a page whose hours vary by 10 % as one of 20 %, deaf to a
// holiday at half its views. Every hour of the page says how noisy it
// is, so the prior is the page's own: read once a day, with its trend,
// from every 7th hour of the week over the weeks before, each such
// hour's φ by the same estimate as a normal's, their trimmed mean the
// page's.

const (
	// NoiseWeeks is how many weeks of hours a page's noise is read from.
	NoiseWeeks = 4
	// NoiseMinWeeks is the fewest: a young site's are as many as its
	// data covers.
	NoiseMinWeeks = 2
	// NoiseMinMedian is the least an hour-of-week's median must be for
	// its φ to count: under it the hour's Poisson noise hides the rest.
	NoiseMinMedian = 10.0
	// NoiseEvery is which hours of the week are read: every 7th, 24 of
	// the 168, one at each hour of the day, spread over the week (7 and
	// 24 have no common factor). All 168 were read at first: at 100k
	// pages and 100M hits a month, ClickHouse needed 1.9 GiB to group
	// them by page and hour of the week (docs/performance.md).
	NoiseEvery = 7
	// NoiseMinHours is the fewest hours read that must count: half a
	// day's worth, so a page busy for a few hours a week says nothing
	// of itself.
	NoiseMinHours = 12
	// NoiseTrimPercent of the hours' φ are left out at each end: a past
	// surge or holiday lifts a few hours' φ, not the page's.
	NoiseTrimPercent = 10
	// noiseFloor is the least a page's noise counts as: its hours are
	// never taken for quieter than a 14 % spread, which also stands for
	// what the normal itself misses (a slow trend not yet followed, a
	// rhythm moved by a clock change).
	noiseFloor = 0.02
	// noiseWeight is how many samples the page's own noise counts as
	// against an hour's own: more than the global prior's 2, as it is
	// read from some 100 of the page's hours rather than assumed.
	noiseWeight = 4.0
)

// NoiseHours is the hours a page's noise is read from for windows ending
// at end: whole weeks ending where its trend's days end, as many as its
// site's data covers from dataStart, up to NoiseWeeks; weeks is 0 when
// that is under NoiseMinWeeks. The same for every window of a UTC day.
func NoiseHours(end, dataStart time.Time) (from time.Time, weeks int) {
	to := TrendFrom(end).AddDate(0, 0, TrendDays)
	weeks = min(NoiseWeeks, int(to.Sub(dataStart)/(7*24*time.Hour)))
	if dataStart.IsZero() {
		weeks = NoiseWeeks
	}
	if weeks < NoiseMinWeeks {
		return time.Time{}, 0
	}
	return to.AddDate(0, 0, -7*weeks), weeks
}

// HourSlots is a page's hours from from over weeks weeks that its noise
// reads, by hour of the week: slots[j][w] the views of hour
// j × NoiseEvery of week w.
func HourSlots(from time.Time, weeks int, views func(hour time.Time) float64) [][]float64 {
	slots := make([][]float64, 7*24/NoiseEvery)
	for j := range slots {
		slots[j] = make([]float64, weeks)
		for w := range weeks {
			slots[j][w] = views(from.Add(time.Duration(w*7*24+j*NoiseEvery) * time.Hour))
		}
	}
	return slots
}

// PageNoise is a page's overdispersion from its hours by hour of the
// week (HourSlots, every hour-of-week with as many samples): each
// hour-of-week's φ as a normal reads it (MAD, unbiased for its samples,
// less Poisson's share), over those whose median is at least
// NoiseMinMedian; their mean, NoiseTrimPercent left out at each end.
// ok is false under NoiseMinHours such hours.
//
// The trim takes more from the long upper tail of a φ read from a few
// samples than from the lower, so this reads a page whose hours vary by
// 15 % to 30 % as about 0.8 (4 weeks) or 0.7 (2 or 3) of its φ. Left
// so: unbiased (÷ 0.78, 0.70, 0.73), make eval-synthetic and make eval
// heard fewer events (docs/unusual-rules.md, the neighbours).
//
// sinks/clickhouse computes the same where the hours are
// (traffic.NoiseQuery); TestPageNoiseAgreesWithClickHouse holds them to it.
func PageNoise(slots [][]float64) (phi float64, ok bool) {
	var phis []float64
	for _, xs := range slots {
		if len(xs) < NoiseMinWeeks {
			continue
		}
		xs = slices.Clone(xs)
		m := median(xs)
		if m < NoiseMinMedian {
			continue
		}
		s := 1.4826 * mad(xs, m)
		v := s * s * NoiseBias(len(xs))
		phis = append(phis, max(0, (v-m)/(m*m)))
	}
	if len(phis) < NoiseMinHours {
		return 0, false
	}
	slices.Sort(phis)
	cut := len(phis) * NoiseTrimPercent / 100
	var sum float64
	for _, p := range phis[cut : len(phis)-cut] {
		sum += p
	}
	return sum / float64(len(phis)-2*cut), true
}

// ReadNoise is a page's noise for windows ending at end, from its views
// per UTC hour (hourViews) and its site's first moment with data: what
// the backtest and the console read, and the sweep asks ClickHouse for.
func ReadNoise(end, dataStart time.Time, hourViews func(hour time.Time) float64) (phi float64, ok bool) {
	from, weeks := NoiseHours(end, dataStart)
	if weeks == 0 {
		return 0, false
	}
	return PageNoise(HourSlots(from, weeks, hourViews))
}

// NoiseBias is what (1.4826 × MAD)² of n samples is multiplied by to
// read as their variance (madBias).
func NoiseBias(n int) float64 { return madBias[min(n, len(madBias)-1)] }

// dispersionPrior is what an hour's φ is shrunk towards, and as how many
// samples: the page's own noise (tr.Noise) when read, else the prior
// every page starts from.
func dispersionPrior(tr Trend) (phi, weight float64) {
	if tr.NoiseOK {
		return math.Max(tr.Noise, noiseFloor), noiseWeight
	}
	return phiPrior, phiPriorWeight
}
