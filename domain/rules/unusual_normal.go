package rules

import (
	"fmt"
	"math"
)

// The unusual detector's normal (Expect) and its noise model: what a
// count is measured against, and how far from it is far.

// Expect makes the normal from the samples (see Unusual): one for each
// hour a window ending mid-hour touches, the top of the two the top,
// the bottom of the two the bottom; and so the drop's long window's.
// Each weekly sample is carried forward by the page's trend tr.
func (d *unusualDetector) Expect(spans []Interval, counts []uint64, tr Trend) Expected {
	// A sweep makes one of these per page it reads, a million at a
	// million pages: the samples stay in arrays on the stack.
	var before, after, longBefore, longAfter, next hourSamples
	before.trend, after.trend, longBefore.trend, longAfter.trend, next.trend = tr, tr, tr, tr, tr
	for i, sp := range spans {
		t := sp.Tag
		b, a := &before, &after
		switch {
		case t >= longSpan:
			t -= longSpan
			b, a = &longBefore, &longAfter
		case t >= slopeSpan:
			next.add(t-slopeSpan, counts[i], sp.Weekend)
			continue
		}
		if t >= nextHour {
			a.add(t-nextHour, counts[i], sp.Weekend)
		} else {
			b.add(t, counts[i], sp.Weekend)
		}
	}
	e, latest := d.expectWindow(&before, &after)
	if e.OK {
		e.Recent = recentNormal(spans, counts)
		if next.nd+next.nw > 0 {
			// The hour after the latest one read over it.
			if n := d.expectHour(&next); n.OK {
				e.Rise, e.RiseFrom = max(0, n.Top-latest), latest
			}
		}
	}
	if e.OK && longBefore.nd+longBefore.nw > 0 {
		l, _ := d.expectWindow(&longBefore, &longAfter)
		e.Long = LongNormal{Value: l.Value, Bottom: l.Bottom, Low: l.Low, High: l.High, Dispersion: l.Dispersion, Samples: l.Samples, OK: l.OK}
	}
	return e
}

// expectWindow is the normal of one window from its samples ending at
// the hour before its end and the one after, and the top of the latter's
// (of the former's, when the window ends on the hour).
func (d *unusualDetector) expectWindow(before, after *hourSamples) (Expected, float64) {
	e := d.expectHour(before)
	if after.nd+after.nw == 0 || !e.OK {
		return e, e.Top
	}
	f := d.expectHour(after)
	if !f.OK {
		return e, e.Top
	}
	e.Value = (e.Value + f.Value) / 2
	e.Bottom, e.Top = min(e.Bottom, f.Bottom), max(e.Top, f.Top)
	e.Low, e.High = min(e.Low, f.Low), max(e.High, f.High)
	e.Dispersion = max(e.Dispersion, f.Dispersion)
	e.Samples = min(e.Samples, f.Samples)
	e.WeeksBack, e.DaysBack = min(e.WeeksBack, f.WeeksBack), min(e.DaysBack, f.DaysBack)
	return e, f.Top
}

// Advice is what `sweeper check` and a sweeper starting say of a
// validated rule with a setting known to misjudge, each naming the rule
// and the setting: with under 3 weeks an unusual rule's pages never
// leave the regime of their second and third weeks, where a weekend
// day's normal is read mostly from weekdays (docs/unusual-rules.md, "Not
// done yet"). Only that kind has any. (Weeks 0 is a rule not yet
// validated, which validation makes 4.)
func Advice(r *Rule) []string {
	if r.Unusual == nil || r.Unusual.Weeks == 0 || r.Unusual.Weeks >= 3 {
		return nil
	}
	return []string{fmt.Sprintf("rule %s: unusual.weeks %d: under 3, a weekend day's normal is read mostly from weekdays; use 3 or more", r.Name, r.Unusual.Weeks)}
}

// minLikeDays is how many daily samples of the judged day's kind a
// page's noise is read from instead of all of them.
const minLikeDays = 3

// maxSamples bounds one hour's samples: a day each of dailyDays, a week
// each of MaxUnusualWeeks.
const maxSamples = dailyDays + MaxUnusualWeeks

// hourSamples are one hour's counts: on past days, and on the same
// weekday of past weeks (Tag, days back, a multiple of 7).
type hourSamples struct {
	daily, weekly [maxSamples]float64
	nd, nw        int
	days          int             // the furthest back
	weeksBack     [maxSamples]int // each weekly sample's
	trend         Trend
	// dailyWeekend is each daily sample's Interval.Weekend; weekend the
	// weekly samples', the judged day's own (known once there is one).
	dailyWeekend [maxSamples]bool
	weekend      bool
}

func (h *hourSamples) add(daysBack int, count uint64, weekend bool) {
	switch {
	case daysBack%7 == 0 && h.nw < maxSamples:
		h.weekly[h.nw] = float64(count)
		h.weeksBack[h.nw] = daysBack / 7
		h.weekend = weekend
		h.nw++
	case daysBack%7 != 0 && h.nd < maxSamples:
		h.daily[h.nd] = float64(count)
		h.dailyWeekend[h.nd] = weekend
		h.nd++
	}
	h.days = max(h.days, daysBack)
}

// likeDays are the daily samples of the same kind of day as the judged
// one (weekday or weekend), in their order: before median reorders
// daily, which dailyWeekend is in step with.
func (h *hourSamples) likeDays(out *[maxSamples]float64) int {
	n := 0
	for i, x := range h.daily[:h.nd] {
		if h.dailyWeekend[i] == h.weekend {
			out[n] = x
			n++
		}
	}
	return n
}

// expectHour is the normal from one hour's samples (reordered).
func (d *unusualDetector) expectHour(h *hourSamples) Expected {
	daily, weekly := h.daily[:h.nd], h.weekly[:h.nw]
	e := Expected{Samples: h.nd + h.nw, Days: h.days, WeeksBack: h.nw, DaysBack: h.nd}
	if h.trend.NoiseOK {
		e.Noise = h.trend.Noise
	}
	if h.trend.OK && len(weekly) > 0 {
		e.Trend = math.Expm1(h.trend.Weekly)
		// φ too is read from the samples carried forward: a trend's
		// spread is not noise (4 weeks of a page rising 9 % a week read
		// as a page whose hours vary by 30 %).
		var carried [maxSamples]float64
		for i, x := range weekly {
			carried[i] = x * h.trend.scale(h.weeksBack[i])
		}
		weekly = carried[:len(weekly)]
	}
	var samples []float64
	switch {
	case len(weekly) >= 3:
		e.Value = median(weekly)
		e.Low, e.High = e.Value, e.Value
		e.Weekly = true
		samples = weekly
	case len(weekly) >= 1 && len(daily) >= 1:
		// The noise of a page's second and third weeks is read from its
		// last 6 days; on a weekday, from the weekdays among them when
		// there are 3 or more. A page whose weekends are at 30 % of its
		// weekdays read as one whose hours vary by half, and missed 16
		// of the 72 surges of 3 hours at 4 × on weekdays of its second
		// and third weeks (second-weeks; on 13 of its 36 pages, one of
		// 3,000 views an hour). (A weekend day has 1 like day among the
		// 6, and reads all 6.) The value stays the mean of both medians:
		// the weekly samples are of its own weekday already.
		var like [maxSamples]float64
		nl := h.likeDays(&like)
		w, dd := median(weekly), median(daily)
		e.Value = (w + dd) / 2
		e.Low, e.High = min(w, dd), max(w, dd)
		e.Weekly = true
		samples = daily
		if nl >= minLikeDays {
			samples = like[:nl]
		}
	case len(daily) >= 1:
		// A page's second day is judged against its first (a series of
		// 4 days has its events there too); one sample's uncertainty
		// (noise) asks a surge of a few times its normal, not 2 ×.
		e.Value = median(daily)
		e.Low, e.High = e.Value, e.Value
		samples = daily
	default:
		return e
	}
	e.OK = true
	n := float64(len(samples))
	m := median(samples)
	phi := 0.0
	if m > 0 {
		var dev [maxSamples]float64
		for i, x := range samples {
			dev[i] = math.Abs(x - m)
		}
		s := 1.4826 * median(dev[:len(samples)])
		v := s * s * madBias[min(len(samples), len(madBias)-1)]
		phi = max(0, (v-m)/(m*m))
	}
	// The prior keeps three alike samples from claiming a page has no
	// noise beyond Poisson's; the hour's own spread wins as they grow.
	prior, weight := dispersionPrior(h.trend)
	e.Dispersion = (n*phi + weight*prior) / (n + weight)
	e.Samples = len(samples)
	e.Bottom, e.Top = e.Low, e.High
	e.Low, e.High = max(0, d.countAt(e, e.Bottom, -usualZ)), d.countAt(e, e.Top, usualZ)
	return e
}

// madBias unbiases the squared MAD of n normal samples (index n) as a
// variance: with 4, (1.4826 × MAD)² is 0.72 of σ² on average (simulated,
// 400,000 draws each), so a page's overdispersion read from 4 weeks of
// one hour was read low by a quarter.
var madBias = [...]float64{1, 1, 0.91, 1.31, 1.39, 1.10, 1.16, 1.05, 1.09, 1.04, 1.06, 1.03, 1.04}

// noise is how many times Poisson's spread a count about mu has on the
// square-root scale: the negative binomial's (1 + φμ), times the
// normal's own uncertainty (a median of n samples: 1.57/n of a count's).
func noise(e Expected, mu float64) float64 {
	return math.Sqrt((1 + e.Dispersion*mu) * (1 + 1.57/float64(max(e.Samples, 1))))
}

// countAt is the count z noise units from mu. Above mu it is Anscombe's
// square root, on which a count's spread is about ½ × noise. Below mu
// it is the negative binomial's own lower tail (lowerCountAt): the
// square root's, the mirror of its upper one, falls far below it on a
// large page whose days vary. Below 0 it is -1: no count is that low.
func (d *unusualDetector) countAt(e Expected, mu, z float64) float64 {
	if z < 0 {
		return lowerCountAt(e, mu, z)
	}
	r := math.Sqrt(mu+0.375) + z*noise(e, mu)/2
	return r*r - 0.375
}

// lowerCountAt is the count z (< 0) noise units below mu by Wilson and
// Hilferty's cube root of the gamma with the count's mean and variance
// (the negative binomial's μ + φμ², times the normal's own uncertainty),
// whose lower tail is the negative binomial's. The square root's lower
// tail, the mirror of its upper one, lies below it, the more so the
// more a page's days vary: 5 units down at φ 0.04 on a normal of 2,000
// it is 0.25 × mu, at φ 0.1 0.04 ×, where the negative binomial's are
// 0.29 × and 0.11 × (the gamma's 0.29 × and 0.10 ×;
// TestLowerTailIsTheNegativeBinomials). Upward the square root is
// within a few percent of the negative binomial (2.26 × against 2.35 ×
// at φ 0.04), and stays.
func lowerCountAt(e Expected, mu, z float64) float64 {
	if mu <= 0 {
		return -1
	}
	k := gammaShape(e, mu)
	c := 1 - 1/(9*k) + z/(3*math.Sqrt(k))
	if c < 0 {
		return -1
	}
	return mu * c * c * c // the gamma's scale × its shape is its mean
}

// gammaShape is the shape of the gamma with the count's mean (mu) and
// variance: mu² over the variance.
func gammaShape(e Expected, mu float64) float64 {
	return mu / ((1 + e.Dispersion*mu) * (1 + 1.57/float64(max(e.Samples, 1))))
}

// NoiseZ is how many noise units count is from mu, measured as countAt
// measures (positive above; a count just under mu, inside the gamma's
// offset from it, reads 0): the inverse countAt is tested against.
func NoiseZ(e Expected, mu float64, count uint64) float64 {
	if c := float64(count); c < mu {
		k := gammaShape(e, mu)
		return min(0, (math.Cbrt(c/mu)-(1-1/(9*k)))*3*math.Sqrt(k))
	}
	return 2 * (math.Sqrt(float64(count)+0.375) - math.Sqrt(mu+0.375)) / noise(e, mu)
}
