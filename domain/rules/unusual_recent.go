package rules

import (
	"math"
	"time"

	"github.com/pagewatch/pagewatch/domain/clocks"
)

// A window against its hours before. A page whose days vary (weather,
// news: a Thursday at 1.7 × the last) has a wide usual range, and a
// night at 2.5 × its normal sits in it. Its day's level is in its own
// hours before the window, though: on the same weekday of past weeks the
// window was about the same share of them, and a window far above that
// share is a surge whatever the day's level. The sweep reads those hours
// already (a drop's: Reach.Long) on the same days back as the normal, so
// this asks nothing more of ClickHouse.

// weighRecent: a window far above what its own hours before make it
// (Expected.Recent), by sensitivity noise units of that ratio's own
// spread, and past the floors and above its usual range as any surge. A
// hole in the data of those hours (late) says nothing.
func weighRecent(o Observation, rule *Rule, floor float64, j *judgement) {
	e, u, c := o.Expected, rule.Unusual, float64(o.Count)
	r := e.Recent
	if !r.OK || o.Late || o.LongLate || o.Long <= o.Count {
		return
	}
	before := float64(o.Long - o.Count)
	if !dayLevelUsual(e, before) {
		return
	}
	mu := before * r.Ratio
	s := max(r.Spread, recentFloor)
	// The spread of the ratio on n weeks, the median's own uncertainty
	// (as a normal's), and this window's counting noise.
	sd := math.Sqrt(s*s*(1+1.57/float64(r.Samples)) + 1/max(mu, 1))
	level := max(mu*math.Exp(u.Sensitivity*sd), floor, u.Factor*e.Top, e.High, float64(u.MinCount))
	if c < level || clockMayLag(rule, o) {
		return
	}
	j.fires, j.level, j.severity = true, level, c/level
	j.short, j.long, j.burst = false, false, true // heard on its window, a surge to remember
	j.before, j.beforeRatio = o.Long-o.Count, r.Ratio
}

// dayLevelUsual: the hours before are at a level the page's days have
// (within 2 units of its own noise of their normal), so they say the
// day's level. Hours before far under it are a drop, an outage or a
// quiet spell, not a day: a window back at its normal after them is no
// surge (a page at 20 in its hours before, back to 160 of a normal near
// 150, fired at 150 against them).
func dayLevelUsual(e Expected, before float64) bool {
	l := e.Long
	normal := l.Value - e.Value // the hours before's own normal
	if !l.OK || normal <= 0 {
		return false
	}
	phi := e.Noise
	if phi <= 0 {
		phi = e.Dispersion
	}
	return before >= normal*math.Exp(-usualZ*math.Sqrt(max(phi, noiseFloor)))
}

// recentNormal pairs each sample window with the long window ending with
// it, the same days back (Spans): the window's count against the two
// hours before it. Only the same weekday's (3 or more): a Friday's night
// rises from its evening as a Tuesday's does not, and before the normal
// knows the week its days' rhythm is not known either. The spread is
// of the logarithms, unbiased for its few samples as a normal's is.
func recentNormal(spans []Interval, counts []uint64) RecentNormal {
	type sample struct {
		tag   int
		count float64
	}
	// On the stack, as Expect's samples: a sweep makes one per page.
	var hours, longs [2 * maxSamples]sample
	nh, nl := 0, 0
	for i, sp := range spans {
		switch t := sp.Tag; {
		case t >= longSpan && nl < len(longs) && ((t-longSpan)%nextHour)%7 == 0:
			longs[nl] = sample{t - longSpan, float64(counts[i])}
			nl++
		case t < slopeSpan && nh < len(hours) && (t%nextHour)%7 == 0:
			hours[nh] = sample{t, float64(counts[i])}
			nh++
		}
	}
	var logs [2 * maxSamples]float64
	var seen [MaxUnusualWeeks + 1]bool
	n, weeks := 0, 0
	for _, l := range longs[:nl] {
		for _, h := range hours[:nh] {
			if h.tag != l.tag {
				continue
			}
			if before := l.count - h.count; h.count > 0 && before > 0 {
				logs[n] = math.Log(h.count / before)
				n++
				if w := (h.tag % nextHour) / 7; w <= MaxUnusualWeeks && !seen[w] {
					seen[w] = true
					weeks++
				}
			}
			break
		}
	}
	// Samples are weeks: a window ending mid-hour pairs two hours of
	// each, which are not two weeks' evidence.
	if weeks < 3 {
		return RecentNormal{}
	}
	xs := logs[:n]
	m := median(xs)
	var dev [2 * maxSamples]float64
	for i, x := range xs {
		dev[i] = math.Abs(x - m)
	}
	s := 1.4826 * median(dev[:n]) * math.Sqrt(madBias[min(weeks, len(madBias)-1)])
	return RecentNormal{Ratio: math.Exp(m), Spread: s, Samples: weeks, OK: true}
}

// clockMayLag: the page's readers' clocks may have changed lately
// without the normal knowing: its past weeks are then read an hour off
// the hours they are compared with, and a window against its hours
// before is what an hour off moves most (a Friday night that begins at
// 22:00, read at 21:00). So some clock changed:
//   - in the last week, for a rule that learns its sites' clocks whose
//     site is still on UTC's: a site on New York's clocks is known to
//     be only from the week after a change (package clocks); 7 false
//     alarms on the generated city pages in the week after 8 March;
//   - in the weeks the normal reads, for a rule on UTC's clocks (its
//     zone unset): readers on others keep their hours, which its past
//     weeks read an hour off until they all lie after the change; 47
//     false alarms more on the generated pages with the shipped rule
//     on UTC.
//
// A rule on a zone it names reads its weeks on those clocks: never.
func clockMayLag(r *Rule, o Observation) bool {
	var lag time.Duration
	switch {
	case LearnsClocks(r) && o.Clock == "":
		lag = clockLag
	case LearnsClocks(r):
		return false // learned: its weeks are read on the readers' clocks
	case r.Window.zone() == time.UTC:
		lag = time.Duration(r.Unusual.Weeks) * 7 * 24 * time.Hour
	default:
		return false
	}
	return len(clocks.Changes(o.At.Add(-lag), o.At)) > 0
}

// clockLag is how long after a change a site's clock may not be known:
// the week its evidence is read in.
const clockLag = 7 * 24 * time.Hour
