package rules

import "time"

// The unusual detector looking down: a page far below its normal for
// down_for, in its hour or over its hours together.

// maxLong bounds a drop's long window: its spans are read for every
// page of a rule looking down.
const maxLong = 12 * time.Hour

// long is the long window: the rule's window and down_for together (up
// to maxLong), over which a drop must have lasted anyway, and a surge
// that lasted longer is asked back (unusualDetector.back); 0 when it
// adds no hours to the rule's window. A rule looking only up reads it
// too: without, a page twice its size for good was told back each
// night, where its hour's range holds it, and taking off each morning.
func (d *unusualDetector) long() time.Duration {
	w := d.r.Window.Rolling
	if l := min(w+d.u.DownFor, maxLong); l > w {
		return l
	}
	return 0
}

// weighDown: the count far below the bottom of a normal of at least
// min_count, pending until it has lasted down_for. Data that is late is
// not judged: a count with hits missing is no drop.
func (d *unusualDetector) weighDown(o Observation) judgement {
	e, u := o.Expected, d.u
	if o.Late {
		return judgement{}
	}
	if !o.SettledLow.IsZero() && normalBefore(e, d.r.Window.Rolling, o.At, o.SettledLow) {
		// The page's last drop ended at a new normal, and this normal
		// is read mostly from before that drop began (unusual_moved.go):
		// no drop.
		return judgement{known: true}
	}
	j := judgement{known: true, down: true, sustain: u.DownFor}
	// A page this small never goes quiet in an hour (3 views falling to
	// none is noise), but may over its hours together (weighLongDown).
	if e.Bottom >= float64(u.MinCount) {
		j.level = d.dropLevel(e, e, e.Bottom)
		if j.level >= 0 {
			// A drop is told once and resolved once: it does not
			// escalate (a count of 0 would be "infinitely" below its
			// level at the first look).
			j.severity = min(1, max(j.level, 1)/max(float64(o.Count), 1))
			j.pending = float64(o.Count) <= j.level
			j.lingers = float64(o.Count) < e.Low
		}
	}
	if !j.pending {
		if k, ok := d.weighLongDown(o); ok {
			return k
		}
	}
	return j
}

// weighLongDown: the drop's hours together (Reach.Long: the window and
// down_for) far enough below the bottom of their own normal, past the
// same floors, for down_for as the hour must be, while the hour itself
// is under its usual range. A page of 30 views at
// its busiest hour falling to a quarter for a day is 5 noise units
// down in an hour only at its busiest, and back in its evening's range
// by its evening; its 3 hours together say so from the morning. Heard
// at once instead, a normal from a page's first 6 days, mostly
// weekdays, took its first quiet Sunday evening for a drop. Not on
// hours when the site's data was late: a hole in the data is no drop.
func (d *unusualDetector) weighLongDown(o Observation) (judgement, bool) {
	l, u := o.Expected.Long, d.u
	if !l.OK || o.LongLate || l.Bottom < float64(u.MinCount) {
		return judgement{}, false
	}
	if float64(o.Count) >= o.Expected.Low {
		// The hour itself is in its usual range: its hours together are
		// low against a normal its bursts lifted. A page with a burst of
		// 10 × at an hour of its day that moves from day to day has one
		// in 3 of its 3-hour samples lifted, their median often; its
		// ordinary afternoons were "drops" twice a month
		// (TestUnusualIrregularBurstsAreNoDrops).
		return judgement{}, false
	}
	level := d.dropLevel(o.Expected, l.expected(), l.Bottom)
	if level < 0 || float64(o.Long) > level {
		return judgement{}, false
	}
	return judgement{known: true, down: true, pending: true, long: true, level: level,
		sustain:  u.DownFor,
		severity: min(1, max(level, 1)/max(float64(o.Long), 1))}, true
}

// dropLevel is the count at or under which a window whose normal's
// bottom is bottom (its noise as in e) is down: 0.9 × sensitivity
// noise units under it (dropZ), and under bottom / factor; -1 when no
// count is that low. The whole sensitivity left holidays at 40 % of a
// page whose days vary by 15 % unheard (4 same-weekday samples put 5
// units down at about 30 %), and growth's day at 30 % on a page whose
// median of 4 weeks lags its level; at 0.9 × syntheval hears 14 more
// of its 600 events at the same false alarms, the tweets the same.
// Until the normal knows the week (hour, below: 7 days of history) a
// drop needs twice the evidence, as a burst does. Before then the
// normal is the median of the days there are, and two things it cannot
// tell from a drop are common: a page's launch (a new post read 20 × on
// its first day and settling over the next, whose second afternoon was
// 5 noise units under that first day alone), and its first quiet
// weekend after 5 weekdays (every page of a B2B site in the week after
// pagewatch is installed). A page gone to nothing (a broken deploy) is
// still heard, but for a page of tens of views an hour not on its second
// day: twice the evidence from its one day lies under 0 views, and a day
// of views then nothing is also what a page linked once looks like.
func (d *unusualDetector) dropLevel(hour, e Expected, bottom float64) float64 {
	z := d.u.Sensitivity * dropZ
	if !hour.Weekly {
		z = d.u.Sensitivity * firstWeekDropZ
	}
	return min(d.countAt(e, bottom, -z), bottom/d.u.Factor)
}

// byItsHours reports whether an open drop is judged by its hours
// together: it was heard on them, and they are known now.
func (d *unusualDetector) byItsHours(o Observation, ep *Episode) bool {
	return ep.Long && o.Expected.Long.OK && !o.LongLate
}

// tooSmallToTell reports whether an open drop's normal is too small to
// tell the page gone quiet from one back: its hour's, or for a drop
// heard on its hours, theirs. A small page's hour is under min_count
// most of the day; held on it, a drop heard on its hours lasted days
// after the page was back.
func (d *unusualDetector) tooSmallToTell(o Observation, ep *Episode) bool {
	if d.byItsHours(o, ep) {
		return o.Expected.Long.Bottom < float64(d.u.MinCount)
	}
	return o.Expected.Bottom < float64(d.u.MinCount)
}

// maxDropHold is how long a drop is held at hours whose normal is too
// small to tell (a weekend's nights and days), and a surge of hours at
// hours whose range would hold it.
const maxDropHold = 72 * time.Hour

// heldStill reports whether an open episode at an hour that cannot
// tell it from back is still held at at: its hold (Episode.SmallSince)
// begins now or began less than maxDropHold ago. Past that the page's
// normal is taken as it is, so no episode is kept open for ever.
func heldStill(ep *Episode, at time.Time) bool {
	return ep.SmallSince.IsZero() || at.Sub(ep.SmallSince) < maxDropHold
}
