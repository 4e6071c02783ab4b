package rules

import "time"

// Episodes that do not end. A page renamed, deleted or dropped by a
// search engine falls and stays down, and its normal, read from its own
// past, follows it there: once most of the days the normal is read from
// lie inside the drop, the page sits inside its usual range again and
// the drop resolves. That resolve is not "back to normal": it says the
// page has not come back, and that its normal has followed it
// (Firing.NewNormal); so for a page that rose for good (linked from a
// home page), it stayed up. Down, until the normal is read mostly from
// days after the drop began, a drop is not judged again: a page's
// normal reads past days while it has under 3 weeks of history and the
// same weekday of past weeks from then, and a page gone for good in its
// second week was otherwise told gone quiet a second time in its
// fourth, its weeks before the drop outvoting the days after it. Up, a
// surge of hours is held where its hour cannot tell it from back
// (cannotTellUp), as a drop is held at a normal too small to tell.

// settledMemory is how long a state keeps when a drop that resolved at
// a new normal began: past it every normal is read from later days.
const settledMemory = 7 * 24 * time.Hour * (MaxUnusualWeeks + 1)

// normalParts counts the samples the normal e was made from (Expect)
// that lie after t (their middle), at a sweep at at for a window of
// window: those on the same weekday of past weeks and those on past days, with
// how many each part read (a part it did not read has none). A sample k
// days back ends at the whole hour before at, k days back (a day across
// a change of clocks is taken as 24 hours: an hour's error at most).
func normalParts(e Expected, window time.Duration, at, t time.Time) (weeksAfter, weeks, daysAfter, days int) {
	after := func(daysBack int) bool {
		mid := at.Truncate(time.Hour).Add(-time.Duration(daysBack)*24*time.Hour - window/2)
		return mid.After(t)
	}
	weeks = e.WeeksBack
	for k := 1; k <= weeks; k++ {
		if after(7 * k) {
			weeksAfter++
		}
	}
	if weeks >= 3 {
		return weeksAfter, weeks, 0, 0 // the weeks alone (expectHour)
	}
	days = e.DaysBack // read with the weeks' while under 3
	for k := 1; k <= days; k++ {
		if after(k) {
			daysAfter++
		}
	}
	return weeksAfter, weeks, daysAfter, days
}

// normalFollowed reports whether the normal e has followed a page that
// changed at t: half or more of a part it is made from lies after t (a
// page read against past days and past weeks together is back inside
// its range once either part has followed it).
func normalFollowed(e Expected, window time.Duration, at, t time.Time) bool {
	wa, w, da, d := normalParts(e, window, at, t)
	return (w > 0 && 2*wa >= w) || (d > 0 && 2*da >= d)
}

// normalBefore reports whether the normal e is still mostly read from
// days before t: no part of it has more than half its samples after t.
func normalBefore(e Expected, window time.Duration, at, t time.Time) bool {
	wa, w, da, d := normalParts(e, window, at, t)
	return w+d > 0 && 2*wa <= w && 2*da <= d
}

// cannotTellUp reports whether a surge that has lasted longer than its
// hours together (long) sits at an hour whose usual range would hold it
// at its size (Episode.Ratio), its count's own noise taken: a page twice
// its size for good is inside its night's range, and back there says
// nothing. A burst of minutes is over before its hours are, and is
// judged on its hour.
func cannotTellUp(o Observation, ep *Episode, long time.Duration) bool {
	e := o.Expected
	if long <= 0 || o.At.Sub(ep.Since) < long || ep.Ratio <= 0 {
		return false
	}
	return lowerCountAt(e, ep.Ratio*e.Top, -usualZ) <= e.High
}

// cannotTellDown is cannotTellUp for a drop: one that has lasted longer
// than its hours together sits at an hour whose usual range would hold
// it at its level, its count's own noise taken: a page at a third of its
// normal for good is inside its night's wide range. Its level is the
// one its last whole day held (Days.LastDay: a drop a day old, where a
// holiday's is over), or before that its depth (Episode.Depth). Its
// depth alone, its lowest hour, sat under every range: on a review's
// site whose days vary by 15 %, a page that lost its ranking for good
// (to 0.3, 0.4 or 0.5) was told "back to normal" within 1 to 7 days on
// 29 of the 33 draws its drop was heard on, at a morning's or a night's
// range wide enough to hold it.
func cannotTellDown(o Observation, ep *Episode, long time.Duration) bool {
	e := o.Expected
	if long <= 0 || o.At.Sub(ep.Since) < long {
		return false
	}
	if k := ep.LastDay; k > 0 && k < 1 && e.Value > 0 {
		return lowerCountAt(e, k*e.Value, usualZ) >= e.Low
	}
	if ep.Depth <= 0 {
		return false
	}
	return lowerCountAt(e, ep.Depth*e.Bottom, usualZ) >= e.Low
}
