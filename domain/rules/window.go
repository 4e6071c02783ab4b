package rules

import (
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // calendar zones load on machines without /usr/share/zoneinfo

	"gopkg.in/yaml.v3"
)

// WindowKind is rolling, calendar or all.
type WindowKind string

// The kinds of window.
const (
	Rolling  WindowKind = "rolling"
	Calendar WindowKind = "calendar"
	AllTime  WindowKind = "all"
)

// Period is a calendar window's length.
type Period string

// The calendar periods, as written in YAML.
const (
	Day   Period = "day"
	Week  Period = "week" // ISO weeks: Monday to Sunday
	Month Period = "month"
)

// Window is the span a rule counts over. In YAML it is one word: a
// duration ("5m", "1h", "24h"), "day", "week", "month" or "all".
type Window struct {
	Kind     WindowKind
	Rolling  time.Duration // Kind rolling
	Calendar Period        // Kind calendar
	// Zone is where calendar days begin; nil means UTC. Validate sets it
	// from the rule's zone key.
	Zone *time.Location
	// bad is what YAML held when it was none of the above, kept so that
	// Validate reports it with the rule's key path.
	bad string
}

// UnmarshalYAML parses the one-word form. A word it does not know is kept
// for Validate to report, so every rule problem reads the same way.
func (w *Window) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf(`want one word: a duration like "1h", day, week, month or all`)
	}
	*w = ParseWindow(n.Value)
	return nil
}

// ParseWindow reads the one-word form; Validate reports a word it did not
// understand.
func ParseWindow(s string) Window {
	switch s {
	case "all":
		return Window{Kind: AllTime}
	case string(Day), string(Week), string(Month):
		return Window{Kind: Calendar, Calendar: Period(s)}
	}
	if d, err := time.ParseDuration(s); err == nil {
		return Window{Kind: Rolling, Rolling: d}
	}
	return Window{bad: s}
}

// MarshalYAML writes the one-word form back.
func (w Window) MarshalYAML() (any, error) { return w.String(), nil }

// String is the one-word form, also how the window reads in a mail.
func (w Window) String() string {
	switch w.Kind {
	case Rolling:
		return formatDuration(w.Rolling)
	case Calendar:
		return string(w.Calendar)
	case AllTime:
		return "all"
	}
	return w.bad
}

// check validates a window built by hand or by YAML.
func (w Window) check() error {
	switch w.Kind {
	case Rolling:
		if w.Rolling < time.Minute {
			return fmt.Errorf("a rolling window must be at least 1m (counts are per minute), got %s", w.Rolling)
		}
		if w.Rolling%time.Minute != 0 {
			return fmt.Errorf("a rolling window must be whole minutes (counts are per minute), got %s", w.Rolling)
		}
	case Calendar:
		if w.Calendar != Day && w.Calendar != Week && w.Calendar != Month {
			return fmt.Errorf("calendar period must be day, week or month, got %q", w.Calendar)
		}
	case AllTime:
	default:
		return fmt.Errorf(`want a duration like "1h", day, week, month or all, got %q`, w.bad)
	}
	return nil
}

func (w Window) zone() *time.Location {
	if w.Zone == nil {
		return time.UTC
	}
	return w.Zone
}

// Bounds is the span the count covers at now. Rolling: (now−d, now].
// Calendar: [start, end) of the day, week or month holding now, in the
// window's zone, so a day is 23 or 25 hours long on DST changes. All time:
// from the zero time to now. Times come back in the window's zone for
// calendar windows and in now's location otherwise.
func (w Window) Bounds(now time.Time) (from, to time.Time) {
	switch w.Kind {
	case Rolling:
		return now.Add(-w.Rolling), now
	case Calendar:
		return w.calendarStart(now, 0), w.calendarStart(now, 1)
	}
	return time.Time{}, now
}

// calendarStart is the start of the period holding now, plus n periods.
// time.Date normalises out-of-range days and months and resolves wall
// clocks in the zone, which is what makes DST days come out right.
func (w Window) calendarStart(now time.Time, n int) time.Time {
	t := now.In(w.zone())
	y, m, d := t.Date()
	switch w.Calendar {
	case Week:
		back := (int(t.Weekday()) + 6) % 7 // days since Monday
		return time.Date(y, m, d-back+7*n, 0, 0, 0, 0, w.zone())
	case Month:
		return time.Date(y, m+time.Month(n), 1, 0, 0, 0, 0, w.zone())
	}
	return time.Date(y, m, d+n, 0, 0, 0, 0, w.zone())
}

// Key names the calendar window holding now: "2026-03-29", "2026-W13"
// (ISO week and week-year) or "2026-03". Crossing keys use it, so a
// calendar rule's crossing is the same key from every sweeper. Rolling
// and all-time windows have no such identity and return "".
func (w Window) Key(now time.Time) string {
	if w.Kind != Calendar {
		return ""
	}
	t := now.In(w.zone())
	switch w.Calendar {
	case Week:
		y, wk := t.ISOWeek()
		return fmt.Sprintf("%04d-W%02d", y, wk)
	case Month:
		return t.Format("2006-01")
	}
	return t.Format("2006-01-02")
}

// formatDuration writes 24h rather than 24h0m0s, as people write it.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
