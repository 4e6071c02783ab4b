package rules

import (
	"math"
	"slices"
	"time"
)

// Interval is [From, To): the minutes starting in it.
type Interval struct {
	From, To time.Time
	// Tag says which of a detector's windows this is (unusual: how many
	// days back); the detector that listed it reads it.
	Tag int
	// Weekend: the window ends on a Saturday or a Sunday on the clocks
	// its detector reads the page on (unusual: a weekday's noise is read
	// from the weekdays among its past days).
	Weekend bool
}

// OfWindow reports whether the span is a sample of the rule's window
// itself, not of one read beside it (a drop's hours, the hour after
// the latest read, which a burst's climb is read from): what the
// normal of the window alone, its value and usual range, is made from.
// The console's band and live normal draw that, and need not sum three
// times the hours.
func (sp Interval) OfWindow() bool { return sp.Tag < slopeSpan }

// Expected is a page's normal for one window, computed from the counts of
// the windows BaselineSpans lists.
type Expected struct {
	// Value is the baseline: the median of the samples (for new_page, the
	// views over the whole lookback; unusual: the profile's expected
	// count).
	Value float64
	// Bottom and Top bound the normal itself while it is unsure (unusual
	// with a week or two of history: between the weekly and the daily
	// figure); both are Value once it is sure.
	Bottom, Top float64
	// Low and High are the usual range of the count (unusual: about 19
	// windows in 20 of a normal page fall in it). Zero for other kinds.
	Low, High float64
	// Scale is the spread zscore divides by: 1.4826 × the median absolute
	// deviation, at least √Value and 1, so a page whose past was flat is
	// still judged against the noise any count has.
	Scale float64
	// Dispersion is φ of the negative binomial a count is judged with
	// (unusual): its variance is μ + φμ².
	Dispersion float64
	// Samples is how many windows it was computed from.
	Samples int
	// Days is how many days of the page's history the normal reached back
	// over (unusual), for "normal from 3 days of history".
	Days int
	// Weekly is true when the normal knows the week (the same hour of the
	// same weekday in past weeks), false when it is the hour of day over
	// the days there are.
	Weekly bool
	// WeeksBack is how many samples it read on the same weekday of past
	// weeks, DaysBack on past days (unusual): from 3 weeks those alone,
	// under 3 read with the past days'.
	WeeksBack, DaysBack int
	// Rise is how much the top of the normal of the window an hour
	// after the latest one read (the window ending at the whole hour
	// after the judged window's end, or at its end when that is on the
	// hour) is above RiseFrom, the latest's top (a window's count; 0:
	// not above, or not read): how steeply the page climbs out of the
	// hour a burst's minutes are in (unusual).
	Rise, RiseFrom float64
	// Trend is the page's growth a week (0.09: 9 %) its weekly samples
	// were carried forward by (unusual; 0: none), for "rising 9 % a week".
	Trend float64
	// Noise is the page's own overdispersion (unusual, its trend's: read
	// from some 100 of its hours), 0 when not read.
	Noise float64
	// OK is false when there was not enough known history to say what is
	// normal; such a page neither fires nor resolves.
	OK bool
	// Long is the normal of a drop's hours (unusual rules looking down:
	// the window and down_for together, Reach.Long).
	Long LongNormal
	// Recent is the window against the hours just before it (unusual):
	// on the days its normal read, the window's count over theirs.
	Recent RecentNormal
}

// RecentNormal is how a page's window compares with its two hours before
// it on the days its normal read: the median of their ratios, and the
// spread of their logarithms. A day whose level is high or low for all
// its hours (weather, news) moves the window and its hours before
// together, so a window far above its own hours before is a surge even
// on a page whose days vary too much for its normal alone to tell.
type RecentNormal struct {
	Ratio, Spread float64
	Samples       int
	OK            bool
}

// LongNormal is the normal of the longer window a drop is also judged
// on: a small page's hours each say little of a fall, its hours
// together say much. Its fields are Expected's.
type LongNormal struct {
	Value, Bottom, Low, High, Dispersion float64
	Samples                              int
	OK                                   bool
}

// expected is l as an Expected, for the noise model.
func (l LongNormal) expected() Expected {
	return Expected{Value: l.Value, Bottom: l.Bottom, Top: l.Value, Low: l.Low, High: l.High, Dispersion: l.Dispersion, Samples: l.Samples, OK: l.OK}
}

// median sorts xs in place.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// mad is the median absolute deviation of xs from m (xs is reordered).
func mad(xs []float64, m float64) float64 {
	d := make([]float64, len(xs))
	for i, x := range xs {
		d[i] = math.Abs(x - m)
	}
	return median(d)
}
