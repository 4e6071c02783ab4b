package rules

import (
	"math"
	"slices"
	"time"
)

// Interval is [From, To): the minutes starting in it.
type Interval struct{ From, To time.Time }

// Expected is a page's normal for one window, computed from the counts of
// the windows BaselineSpans lists.
type Expected struct {
	// Value is the baseline: the median of the samples (for new_page, the
	// views over the whole lookback).
	Value float64
	// Scale is the spread zscore divides by: 1.4826 × the median absolute
	// deviation, at least √Value and 1, so a page whose past was flat is
	// still judged against the noise any count has.
	Scale float64
	// Samples is how many windows it was computed from.
	Samples int
	// OK is false when there was not enough known history to say what is
	// normal; such a page neither fires nor resolves.
	OK bool
}

// BaselineSpans lists the windows whose counts make a page's normal for
// the rule's window ending at end (exclusive, as a sweep's window end).
// They are whole UTC hours, so a sweep can read them from hourly totals.
// Windows starting before dataStart are left out: before the data began
// a page's views are unknown, not zero, and a new install must not see
// every page as a spike. Nil for threshold rules.
func (r *Rule) BaselineSpans(end, dataStart time.Time) []Interval {
	w := r.Window.Rolling
	floor := end.UTC().Truncate(time.Hour)
	var out []Interval
	add := func(to time.Time) {
		from := to.Add(-w)
		if !from.Before(dataStart) {
			out = append(out, Interval{From: from, To: to})
		}
	}
	switch {
	case r.NewPage != nil:
		// The lookback ends where the window's first whole hour begins.
		to := end.Add(-w).UTC().Truncate(time.Hour)
		from := to.Add(-time.Duration(r.NewPage.Lookback))
		if !from.Before(dataStart) {
			out = append(out, Interval{From: from, To: to})
		}
	case r.Spike == nil:
	case r.Spike.Baseline.SameTime != nil:
		// The nearest whole hour: a window ending at 14:37 is compared
		// with those ending at 15:00 on past days, at most half an hour
		// off either way.
		near := end.UTC().Round(time.Hour).In(r.Window.zone())
		y, m, d := near.Date()
		hh, mm := near.Hour(), near.Minute()
		st := r.Spike.Baseline.SameTime
		// The same wall-clock time k days or weeks back, in the rule's
		// zone: across a DST change that is 23 or 25 hours per day away.
		for k := 1; k <= st.Days; k++ {
			add(time.Date(y, m, d-k, hh, mm, 0, 0, near.Location()).UTC().Truncate(time.Hour))
		}
		for k := 1; k <= st.Weeks; k++ {
			if k*7 <= st.Days {
				continue // already taken as a day
			}
			add(time.Date(y, m, d-7*k, hh, mm, 0, 0, near.Location()).UTC().Truncate(time.Hour))
		}
	case r.Spike.Baseline.Trailing != 0:
		// The window ending at every whole hour of the trailing period
		// before the current window.
		last := floor.Add(-w)
		n := int(time.Duration(r.Spike.Baseline.Trailing) / time.Hour)
		for j := 0; j < n; j++ {
			add(last.Add(-time.Duration(j) * time.Hour))
		}
	case r.Spike.Baseline.ZScore != nil:
		// The windows before the current one, end to end.
		for j := 1; j <= r.Spike.Baseline.ZScore.Windows; j++ {
			add(floor.Add(-time.Duration(j-1) * w))
		}
	}
	return out
}

// minSamples is how many known windows a baseline needs: half of what the
// rule asks for, rounded up, so a page that is one week old can already
// be judged by a rule over four, but not by a single past day.
func (r *Rule) minSamples() int {
	switch {
	case r.NewPage != nil:
		return 1
	case r.Spike == nil:
		return 0
	case r.Spike.Baseline.SameTime != nil:
		st := r.Spike.Baseline.SameTime
		n := st.Days
		for k := 1; k <= st.Weeks; k++ {
			if k*7 > st.Days {
				n++
			}
		}
		return (n + 1) / 2
	case r.Spike.Baseline.Trailing != 0:
		return int(time.Duration(r.Spike.Baseline.Trailing)/time.Hour+1) / 2
	case r.Spike.Baseline.ZScore != nil:
		return (r.Spike.Baseline.ZScore.Windows + 1) / 2
	}
	return 0
}

// Expect computes the page's normal from the counts of BaselineSpans'
// windows, in any order.
func (r *Rule) Expect(counts []uint64) Expected {
	if len(counts) < r.minSamples() || len(counts) == 0 {
		return Expected{Samples: len(counts)}
	}
	if r.NewPage != nil {
		var sum uint64
		for _, c := range counts {
			sum += c
		}
		return Expected{Value: float64(sum), Samples: len(counts), OK: true}
	}
	xs := make([]float64, len(counts))
	for i, c := range counts {
		xs[i] = float64(c)
	}
	med := median(xs)
	for i := range xs {
		xs[i] = math.Abs(xs[i] - med)
	}
	scale := max(1.4826*median(xs), math.Sqrt(med), 1)
	return Expected{Value: med, Scale: scale, Samples: len(counts), OK: true}
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
