package rules

import (
	"strings"
	"testing"
	"time"
)

// A page whose days vary by 25 % has a usual range wide enough to hold
// an evening at 2.5 × its normal (a Thursday, 18:00 to 22:00): on 6
// draws, its normal alone hears 3. Against its own hours before, which
// say the day's level, 2 more are heard, and their whys say those
// hours; the 6th is a day so low that the surge stays inside the usual
// range, where no message is sent (it would read "3,127 views, expected
// 800–3,422"). The same pages without the surge fire nothing after
// their first week. (Bursts are off: on this page's steep morning, 10
// views an hour at 6:00 and 350 at 7:00, a day at 1.4 × fires its last
// 10 minutes before 7:00 against the hour's normal, with or without
// this.)
func TestUnusualHearsASurgeAgainstItsHoursBefore(t *testing.T) {
	off := time.Duration(0)
	r := unusualRule(t, Unusual{Direction: Up, Burst: &off})
	surge := monday.Add(4*7*24*time.Hour + 3*24*time.Hour + 18*time.Hour)
	heard, byHoursBefore := 0, 0
	for seed := uint64(1); seed <= 6; seed++ {
		quiet := unevenDays(seed, 0.25, daily(2000))
		s := newSynth(monday, 5*7, seed, quiet)
		if got := s.run(t, r, monday.Add(8*24*time.Hour)); len(got) != 0 {
			t.Errorf("seed %d, no surge: %v, want nothing", seed, got)
		}
		surged := func(t time.Time) float64 {
			v := quiet(t)
			if !t.Before(surge) && t.Before(surge.Add(4*time.Hour)) {
				v *= 2.5
			}
			return v
		}
		s = newSynth(monday, 5*7, seed, surged)
		got := s.run(t, r, monday.Add(8*24*time.Hour))
		switch {
		case len(got) == 0:
			continue
		case len(got) != 2 || !strings.HasPrefix(got[0], "fire up 04-02 Thu 1") || !strings.HasPrefix(got[1], "resolve up"):
			t.Errorf("seed %d: %v, want the surge fired and resolved", seed, got)
			continue
		}
		heard++
		if a := s.against[0]; a.HoursBefore > 0 {
			byHoursBefore++
			if a.HoursBeforeSpan != 2*time.Hour || a.HoursBeforeRatio < 0.3 || a.HoursBeforeRatio > 0.6 {
				t.Errorf("seed %d: fired against %d views in %s before, usually %.2f × them; want the 2 hours before it, the evening about 0.4 × them", seed, a.HoursBefore, a.HoursBeforeSpan, a.HoursBeforeRatio)
			}
		}
	}
	if heard != 5 || byHoursBefore != 2 {
		t.Errorf("surges heard on %d draws of 6, %d by their hours before; want 5 and 2", heard, byHoursBefore)
	}
}
