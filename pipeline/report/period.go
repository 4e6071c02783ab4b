package report

import "time"

// Span is [From, To).
type Span struct{ From, To time.Time }

// periodsAt returns the last whole period before t in loc, and the one
// before it. Days are calendar days in loc (23 or 25 hours across a DST
// change), weeks start on Monday, months on the first.
func periodsAt(period string, t time.Time, loc *time.Location) (cur, prev Span) {
	t = t.In(loc)
	y, m, d := t.Date()
	var end time.Time
	step := func(x time.Time, n int) time.Time {
		switch period {
		case PeriodWeek:
			return x.AddDate(0, 0, 7*n)
		case PeriodMonth:
			return x.AddDate(0, n, 0)
		}
		return x.AddDate(0, 0, n)
	}
	switch period {
	case PeriodWeek:
		back := (int(t.Weekday()) + 6) % 7 // days since Monday
		end = time.Date(y, m, d-back, 0, 0, 0, 0, loc)
	case PeriodMonth:
		end = time.Date(y, m, 1, 0, 0, 0, 0, loc)
	default:
		end = time.Date(y, m, d, 0, 0, 0, 0, loc)
	}
	cur = Span{From: step(end, -1), To: end}
	prev = Span{From: step(end, -2), To: cur.From}
	return cur, prev
}

// buckets splits s for the chart: hours for a day, days otherwise, each
// starting at a wall-clock boundary in loc.
func buckets(period string, s Span, loc *time.Location) []time.Time {
	var out []time.Time
	for t := s.From.In(loc); t.Before(s.To); {
		out = append(out, t)
		if period == PeriodDay {
			t = t.Add(time.Hour)
		} else {
			y, m, d := t.Date()
			t = time.Date(y, m, d+1, 0, 0, 0, 0, loc)
		}
	}
	return out
}
