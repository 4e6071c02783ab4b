package rules

import "time"

// The spans an unusual rule reads: where in the page's past its normal
// comes from.

// dailyDays is how many past days the hour-of-day normal reads.
const dailyDays = 6

// nextHour tags the spans of the hour after (see Spans).
const nextHour = 1000

// Spans are the same window at the same wall-clock time on each of the
// last 6 days and on the same weekday of the last weeks, in the rule's
// zone: across a DST change a day back is 23 or 25 hours back. Each is
// taken twice, ending at the whole hour before end and at the one after
// (Tag: days back, plus nextHour for the latter): a window ending at
// 20:10 holds minutes of two hours, and a page whose evening starts at
// 20:00, or whose newsletter goes out at 9:00, is judged against both.
// A rule hearing bursts also reads the window an hour after the latest
// of those (Tag: slopeSpan on), which a burst's climb is read from
// (burstTop); one looking down, a drop's hours (Tag: longSpan on).
func (d *unusualDetector) Spans(end, dataStart time.Time) []Interval {
	return unusualSpans(d, end, dataStart, d.r.Window.zone())
}

// unusualSpans is Spans on the clocks of zone.
func unusualSpans(d *unusualDetector, end, dataStart time.Time, zone *time.Location) []Interval {
	w := d.r.Window.Rolling
	var out []Interval
	for i, e := range []time.Time{end.UTC().Truncate(time.Hour), end.UTC().Truncate(time.Hour).Add(time.Hour)} {
		if i == 1 && end.UTC().Truncate(time.Hour).Equal(end.UTC()) {
			break // a window ending on the hour is one hour's
		}
		near := e.In(zone)
		y, m, dd := near.Date()
		hh, mm := near.Hour(), near.Minute()
		add := func(k int) {
			to := time.Date(y, m, dd-k, hh, mm, 0, 0, near.Location()).UTC().Truncate(time.Hour)
			if from := to.Add(-w); !from.Before(dataStart) {
				out = append(out, Interval{From: from, To: to, Tag: k + i*nextHour, Weekend: weekend(y, m, dd-k, hh, mm)})
			}
		}
		for k := 1; k <= dailyDays; k++ {
			add(k)
		}
		for k := 1; k <= d.u.Weeks; k++ {
			add(7 * k)
		}
	}
	if l := d.long(); l > w {
		// The drop's hours, the same days back (Tag: longSpan on).
		n := len(out)
		for _, sp := range out[:n] {
			if from := sp.To.Add(-l); !from.Before(dataStart) {
				out = append(out, Interval{From: from, To: sp.To, Tag: sp.Tag + longSpan, Weekend: sp.Weekend})
			}
		}
	}
	if u := d.u; u.burst() > 0 && u.Direction != Down {
		// A burst's minutes late in an hour are measured against how the
		// page climbs into the next (Expected.Rise): the window an hour
		// after the latest one read, the same days back (Tag: slopeSpan
		// on).
		onHour := end.UTC().Truncate(time.Hour).Equal(end.UTC())
		n := len(out)
		for _, sp := range out[:n] {
			if sp.Tag >= longSpan || (sp.Tag >= nextHour) == onHour {
				continue
			}
			out = append(out, Interval{From: sp.From.Add(time.Hour), To: sp.To.Add(time.Hour), Tag: sp.Tag%nextHour + slopeSpan, Weekend: sp.Weekend})
		}
	}
	return out
}

// weekend reports whether a window ending at hh:mm on the civil date
// y-m-d (the zone's) ends on a Saturday or a Sunday: its last minute's
// day, so a window ending at midnight is the day before's. Read from the
// date, not the instant in the zone: a sweep lists some 40 spans a page.
func weekend(y int, m time.Month, d, hh, mm int) bool {
	if hh == 0 && mm == 0 {
		d--
	}
	switch time.Date(y, m, d, 12, 0, 0, 0, time.UTC).Weekday() {
	case time.Saturday, time.Sunday:
		return true
	}
	return false
}

// longSpan tags the spans of a drop's long window, slopeSpan those of
// the window an hour after the latest one read, which a burst's climb is
// read from (see Spans).
const (
	longSpan  = 1 << 20
	slopeSpan = 1 << 19
)
