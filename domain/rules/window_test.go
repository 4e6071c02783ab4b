package rules

import (
	"testing"
	"time"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestCalendarBoundsAcrossDST(t *testing.T) {
	berlin, ny := zone(t, "Europe/Berlin"), zone(t, "America/New_York")
	tests := []struct {
		name   string
		loc    *time.Location
		period Period
		now    string // RFC 3339, any offset
		from   string // wall clock in loc
		hours  float64
		key    string
	}{
		{"berlin spring-forward day", berlin, Day, "2026-03-29T12:00:00+02:00", "2026-03-29 00:00 +0100", 23, "2026-03-29"},
		{"berlin fall-back day", berlin, Day, "2026-10-25T23:59:00+01:00", "2026-10-25 00:00 +0200", 25, "2026-10-25"},
		{"berlin plain day", berlin, Day, "2026-03-30T00:00:00+02:00", "2026-03-30 00:00 +0200", 24, "2026-03-30"},
		{"berlin day just before midnight, seen from UTC", berlin, Day, "2026-03-29T21:59:59Z", "2026-03-29 00:00 +0100", 23, "2026-03-29"},
		{"berlin next day, seen from UTC", berlin, Day, "2026-03-29T22:00:00Z", "2026-03-30 00:00 +0200", 24, "2026-03-30"},
		{"berlin week with the change", berlin, Week, "2026-03-29T23:00:00+02:00", "2026-03-23 00:00 +0100", 7*24 - 1, "2026-W13"},
		{"berlin week starts monday", berlin, Week, "2026-03-30T00:00:00+02:00", "2026-03-30 00:00 +0200", 7 * 24, "2026-W14"},
		{"berlin march", berlin, Month, "2026-03-31T23:59:00+02:00", "2026-03-01 00:00 +0100", 31*24 - 1, "2026-03"},
		{"berlin october", berlin, Month, "2026-10-01T00:00:00+02:00", "2026-10-01 00:00 +0200", 31*24 + 1, "2026-10"},
		{"new york spring-forward day", ny, Day, "2026-03-08T03:30:00-04:00", "2026-03-08 00:00 -0500", 23, "2026-03-08"},
		{"new york fall-back day", ny, Day, "2026-11-01T01:30:00-05:00", "2026-11-01 00:00 -0400", 25, "2026-11-01"},
		{"iso week-year at new year", time.UTC, Week, "2027-01-01T10:00:00Z", "2026-12-28 00:00 +0000", 7 * 24, "2026-W53"},
		{"december month", time.UTC, Month, "2026-12-15T00:00:00Z", "2026-12-01 00:00 +0000", 31 * 24, "2026-12"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := Window{Kind: Calendar, Calendar: tc.period, Zone: tc.loc}
			now, err := time.Parse(time.RFC3339, tc.now)
			if err != nil {
				t.Fatal(err)
			}
			from, to := w.Bounds(now)
			if got := from.Format("2006-01-02 15:04 -0700"); got != tc.from {
				t.Errorf("from = %s, want %s", got, tc.from)
			}
			if got := to.Sub(from).Hours(); got != tc.hours {
				t.Errorf("length = %vh, want %vh", got, tc.hours)
			}
			if now.Before(from) || !now.Before(to) {
				t.Errorf("now %s not in [%s, %s)", now, from, to)
			}
			if got := w.Key(now); got != tc.key {
				t.Errorf("Key = %q, want %q", got, tc.key)
			}
			// The last instant of the window has the same key; the end has the next.
			if w.Key(to.Add(-time.Nanosecond)) != tc.key || w.Key(to) == tc.key {
				t.Errorf("key does not change exactly at %s", to)
			}
		})
	}
}

func TestRollingAndAllTimeBounds(t *testing.T) {
	now := time.Date(2026, 3, 29, 2, 30, 0, 0, time.UTC)
	from, to := ParseWindow("1h").Bounds(now)
	if !from.Equal(now.Add(-time.Hour)) || !to.Equal(now) {
		t.Errorf("rolling bounds = %s, %s", from, to)
	}
	from, to = ParseWindow("all").Bounds(now)
	if !from.IsZero() || !to.Equal(now) {
		t.Errorf("all-time bounds = %s, %s", from, to)
	}
	if ParseWindow("1h").Key(now) != "" || ParseWindow("all").Key(now) != "" {
		t.Error("rolling and all-time windows have no key")
	}
	// A nil zone is UTC.
	if got := (Window{Kind: Calendar, Calendar: Day}).Key(now); got != "2026-03-29" {
		t.Errorf("Key = %q", got)
	}
}

func TestParseWindow(t *testing.T) {
	for in, want := range map[string]string{"5m": "5m", "1h": "1h", "24h": "24h", "90m": "1h30m", "day": "day", "week": "week", "month": "month", "all": "all", "fortnight": "fortnight"} {
		if got := ParseWindow(in).String(); got != want {
			t.Errorf("ParseWindow(%q).String() = %q, want %q", in, got, want)
		}
	}
}
