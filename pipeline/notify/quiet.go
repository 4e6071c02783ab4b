package notify

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// QuietHours is a receiver's recurring quiet time, in a time zone: from
// Start to End (the next day when End is earlier), on the days it
// begins. Crossings for the receiver inside it are held and sent as one
// digest when it ends (mode hold), or only recorded (mode record).
//
// Times are wall-clock times in TimeZone, so 22:00–07:00 stays 22:00–
// 07:00 across a DST change, and the night of the change is an hour
// shorter or longer. A Start or End that does not exist that night (in
// the hour skipped in spring) falls an hour later; one that exists twice
// (in autumn) is either of them.
type QuietHours struct {
	Start    string   `yaml:"start"`     // "22:00"; empty: no quiet hours
	End      string   `yaml:"end"`       // "07:00"
	Days     []string `yaml:"days"`      // mon..sun: the days it begins on; empty: every day
	TimeZone string   `yaml:"time_zone"` // IANA name, e.g. Europe/Berlin
	Mode     string   `yaml:"mode"`      // hold (default) or record
}

// Quiet-hours modes.
const (
	QuietHold   = "hold"
	QuietRecord = "record"
)

var weekdays = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// Enabled reports whether there are quiet hours at all.
func (q QuietHours) Enabled() bool { return q.Start != "" }

// Holds reports whether crossings inside are held for a digest.
func (q QuietHours) Holds() bool { return q.Mode == "" || q.Mode == QuietHold }

// Validate reports every problem, naming the key (e.g.
// "receivers[2].quiet_hours").
func (q QuietHours) Validate(key string) error {
	if !q.Enabled() {
		if q.End != "" || len(q.Days) > 0 {
			return fmt.Errorf("%s.start: must be set when end or days are", key)
		}
		return nil
	}
	var errs []error
	s, err1 := clock(q.Start)
	if err1 != nil {
		errs = append(errs, fmt.Errorf("%s.start: %w", key, err1))
	}
	e, err2 := clock(q.End)
	if err2 != nil {
		errs = append(errs, fmt.Errorf("%s.end: %w", key, err2))
	}
	if err1 == nil && err2 == nil && s == e {
		errs = append(errs, fmt.Errorf("%s: start and end are both %s", key, q.Start))
	}
	for _, d := range q.Days {
		if !slices.Contains(weekdays, strings.ToLower(d)) {
			errs = append(errs, fmt.Errorf("%s.days: %q is not one of %s", key, d, strings.Join(weekdays, ", ")))
		}
	}
	if _, err := location(q.TimeZone); err != nil {
		errs = append(errs, fmt.Errorf("%s.time_zone: %w", key, err))
	}
	if q.Mode != "" && q.Mode != QuietHold && q.Mode != QuietRecord {
		errs = append(errs, fmt.Errorf("%s.mode: must be %s or %s, got %q", key, QuietHold, QuietRecord, q.Mode))
	}
	return errors.Join(errs...)
}

// In reports whether t is inside the quiet hours.
func (q QuietHours) In(t time.Time) bool {
	_, _, ok := q.Period(t)
	return ok
}

// Period returns the quiet period t falls in: [start, end).
func (q QuietHours) Period(t time.Time) (start, end time.Time, ok bool) {
	if !q.Enabled() {
		return time.Time{}, time.Time{}, false
	}
	loc, err := location(q.TimeZone)
	if err != nil {
		return time.Time{}, time.Time{}, false
	}
	sm, err1 := clock(q.Start)
	em, err2 := clock(q.End)
	if err1 != nil || err2 != nil {
		return time.Time{}, time.Time{}, false
	}
	lt := t.In(loc)
	for _, offset := range []int{-1, 0} {
		y, m, d := lt.Date()
		day := time.Date(y, m, d+offset, 12, 0, 0, 0, loc) // noon: never in a DST gap
		if len(q.Days) > 0 && !slices.ContainsFunc(q.Days, func(s string) bool { return strings.EqualFold(s, weekdays[day.Weekday()]) }) {
			continue
		}
		y, m, d = day.Date()
		start = time.Date(y, m, d, sm/60, sm%60, 0, 0, loc)
		endDay := d
		if em <= sm {
			endDay++
		}
		end = time.Date(y, m, endDay, em/60, em%60, 0, 0, loc)
		if !t.Before(start) && t.Before(end) {
			return start, end, true
		}
	}
	return time.Time{}, time.Time{}, false
}

// clock parses "HH:MM" into minutes after midnight.
func clock(s string) (int, error) {
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, fmt.Errorf("want HH:MM (24 h), got %q", s)
	}
	return t.Hour()*60 + t.Minute(), nil
}

// location loads a time zone; "" is UTC. It is read each time, not kept
// in a package-level cache: a quiet-hours check runs once per crossing
// and receiver, and reading a zone costs microseconds beside a send.
func location(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q", name)
	}
	return l, nil
}
