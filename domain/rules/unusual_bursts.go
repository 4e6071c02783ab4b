package rules

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// A page's memory of its own surges (State.Bursts): which are its
// normal, and how long they last; and a burst's own normal.

// burstTop is the top of the normal of the burst of minutes b ending
// with the window w judged at o: the window's top spread evenly over it,
// or, late in an hour before a busier one (Expected.Rise), the line from
// the latest window the normal read (ending at the whole hour after the
// window's end, or at its end when on the hour) to the one an hour
// later, read at the burst's middle, where that is higher: a page
// climbing from 30 views an hour at 8:00 to 3,000 at 9:00 has its 8:50s
// at 2,500 an hour, not at the hour's 1,500, and was told a surge of its
// own mornings. Before the latest window's middle the window's top
// stands (a line read from the hour before would be under it).
func burstTop(o Observation, w, b time.Duration) float64 {
	e := o.Expected
	top := e.Top
	if e.Rise > 0 {
		end := o.End
		if end.IsZero() {
			end = o.At
		}
		hourEnd := end.UTC().Truncate(time.Hour)
		if !hourEnd.Equal(end.UTC()) {
			hourEnd = hourEnd.Add(time.Hour)
		}
		if past := end.Add(-b / 2).Sub(hourEnd.Add(-w / 2)); past > 0 {
			top = max(top, e.RiseFrom+e.Rise*min(past, time.Hour).Hours())
		}
	}
	return top * float64(b) / float64(w)
}

// secondHighest is the second highest count of bursts at or after since
// but the one that holds the run begun at run (zero: none; 0 with fewer
// than two).
func secondHighest(bursts []Burst, since, run time.Time) uint64 {
	var a, b uint64
	for _, x := range bursts {
		if x.At.Before(since) || ofRun(x, run) {
			continue
		}
		switch {
		case x.Count >= a:
			a, b = x.Count, a
		case x.Count > b:
			b = x.Count
		}
	}
	return b
}

// nthHighest is the n-th highest count of bursts at or after since, but
// the one that holds the run begun at run (zero: none is; 0 with fewer
// than n); secondHighest without sorting for n = 2, the judgment of
// every page. A surge is measured against the page's other bursts:
// counted among them from its first sweeps past its normal, its bar
// climbed with it, and one that hovered between the page's second
// highest and highest bursts for hours was never heard.
func nthHighest(bursts []Burst, since, run time.Time, n int) uint64 {
	if n <= 2 {
		return secondHighest(bursts, since, run)
	}
	return nthLargest(bursts, since, run, n, func(b Burst) uint64 { return b.Count })
}

// ofRun reports whether b holds the run begun at run (zero: no run).
func ofRun(b Burst, run time.Time) bool {
	return !run.IsZero() && run.Sub(b.At) < burstGroup
}

// nthLongest is secondLongest's n-th, for bursts of other pages (no run
// of its own left out).
func nthLongest(bursts []Burst, since time.Time, n int) time.Duration {
	if n <= 2 {
		return secondLongest(bursts, since, time.Time{})
	}
	return nthLargest(bursts, since, time.Time{}, n, Burst.lasted)
}

// nthLargest is the n-th largest of(b) of bursts at or after since, but
// the one holding the run begun at run (0 with fewer than n).
func nthLargest[T cmp.Ordered](bursts []Burst, since, run time.Time, n int, of func(Burst) T) T {
	var v []T
	for _, x := range bursts {
		if !x.At.Before(since) && !ofRun(x, run) {
			v = append(v, of(x))
		}
	}
	if len(v) < n {
		var zero T
		return zero
	}
	slices.SortFunc(v, func(a, b T) int { return cmp.Compare(b, a) })
	return v[n-1]
}

// secondLongest is the second longest run of bursts at or after since,
// but for the burst that holds the run begun at run (it is being
// measured; zero: none is, the bursts are other pages' launches), a
// burst remembered without its length taken as burstGroup (0 with fewer
// than two).
func secondLongest(bursts []Burst, since, run time.Time) time.Duration {
	var a, b time.Duration
	for _, x := range bursts {
		if x.At.Before(since) || ofRun(x, run) {
			continue
		}
		l := x.lasted()
		switch {
		case l >= a:
			a, b = l, a
		case l > b:
			b = l
		}
	}
	return b
}

// burstGroup is how close surges are to be remembered as one burst.
const burstGroup = 6 * time.Hour

// maxBursts is how many bursts a state remembers.
const maxBursts = 16

// rememberBurst notes a page's burst at at, in a run begun at run: one
// per burstGroup of runs begun in it (the highest count, and the longest
// run), those older than pastSpan forgotten. A run of days is one burst,
// not one a burstGroup: it is not reached twice by itself.
// A run seen at one sweep counts as a minute, so that a length of 0
// stays "not known".
func rememberBurst(bursts []Burst, at, run time.Time, count uint64) []Burst {
	lasted := max(at.Sub(run), time.Minute)
	out := make([]Burst, 0, len(bursts)+1)
	for _, b := range bursts {
		if !b.At.Before(at.Add(-pastSpan)) {
			out = append(out, b)
		}
	}
	if n := len(out); n > 0 && run.Sub(out[n-1].At) < burstGroup {
		out[n-1].Count = max(out[n-1].Count, count)
		out[n-1].Lasted = max(out[n-1].Lasted, lasted)
		return out
	}
	out = append(out, Burst{At: at, Count: count, Lasted: lasted})
	if len(out) > maxBursts {
		out = out[len(out)-maxBursts:]
	}
	return out
}

// Remembers is how far back what a rule's states carry from one sweep to
// the next reaches: an unusual rule's bursts and its site's launches, 4
// weeks. A replay begun that much before the time it reports from
// judges that time as a sweeper running all along did; begun there, a
// page at 0 between bursts took its first bursts in the replay for news,
// and a site's first new pages in it were its first launches. 0 for the
// other rules, whose states hold their current episode only. A page's
// new level (State.Raised) is read while its normal's weeks lie in part
// before its rise (28 days at 4 weeks), set two days after it: a replay
// begun 40 days before (the 38 days its trend is read in part from
// before the rise, and those two) knows every level still read then.
// (A page's new level after a drop, State.SettledLow, is read for as
// long as a rule's weeks, and a new level of a rule of more than 5
// weeks too: past those 40 days, a replay does not know one older.)
func Remembers(r *Rule) time.Duration {
	if r.Unusual == nil {
		return 0
	}
	return max(pastSpan, bentFor+levelDays)
}

// levelDays is how long after it began a surge is read as a new level
// at the earliest: two days of it (stepLevel).
const levelDays = 2 * 24 * time.Hour

// burstBound is, for a page whose bursts are its normal, the count a
// burst must pass to be news among its remembered bursts at or after
// since (not the one of the run begun at run, being judged; zero: none
// is): the upper 98 % prediction bound of a lognormal fitted to their
// counts (their median and spread in logs, the spread at least
// Poisson's), Student's t for the few there are, and how many it read
// and their typical size. scale (sensitivity over its default) moves the
// bound as sensitivity moves every other bar. Never more than factor ×
// the highest of them: from two or three bursts of unlike sizes (a
// post's launch, then a mention) the bound is the spread of their
// noise, thousands of times their size, and a page that outdoes all its
// bursts by factor is news however few it knows. 0 with fewer than two.
func burstBound(bursts []Burst, since, run time.Time, scale, factor float64) (bound float64, n int, typical float64) {
	var logs [maxBursts]float64
	highest := 0.0
	for _, b := range bursts {
		if !ofRun(b, run) && !b.At.Before(since) && n < len(logs) {
			logs[n] = math.Log(float64(max(b.Count, 1)))
			highest = max(highest, float64(b.Count))
			n++
		}
	}
	if n < 2 {
		return 0, 0, 0
	}
	m := median(logs[:n])
	for i := range n { // their deviations, in place: judged every sweep
		logs[i] = math.Abs(logs[i] - m)
	}
	s := max(1.4826*median(logs[:n]), 1/math.Sqrt(math.Exp(m)))
	bound = math.Exp(m + scale*t98[min(n-1, len(t98)-1)]*s*math.Sqrt(1+1/float64(n)))
	return min(bound, factor*highest), n, math.Exp(m)
}

// burstsApart is how far above what a page's own normal could fire at
// its bursts' typical size must be for them to be something else than
// its traffic surging (a newsletter's sends beside its 3 views an hour).
const burstsApart = 10.0

// t98 is Student's t at 98 % (one-sided) by degrees of freedom (index),
// up to maxBursts - 1.
var t98 = [...]float64{0, 15.89, 4.849, 3.482, 2.999, 2.757, 2.612, 2.517, 2.449, 2.398, 2.359, 2.328, 2.303, 2.282, 2.264, 2.249}
