package rules

import (
	"strings"
	"testing"
	"time"
)

// A page that loses its search ranking for good, on a page whose days
// vary by 15 % (lognormal), falls to 0.4 on its 26th day. Its
// drop's hours at a morning's or a night's range, wide enough to hold
// it, and later its range widened by its drop's own days, read "back":
// it was told "back to normal" within days, and often went quiet and
// back again. A drop a day old is held at hours whose range would hold
// it at the level its last whole day held (Days.LastDay), not its
// lowest hour (Episode.Depth); held for days, no hour able to tell, it
// resolves "has not come back".
func TestUnusualRankingLostForGoodIsNotToldBack(t *testing.T) {
	r := unusualRule(t, Unusual{})
	fall := monday.Add(25*24*time.Hour + 10*time.Hour)
	falsely := 0
	for seed := uint64(1); seed <= 8; seed++ {
		s := newSynth(monday, 42, seed, unevenDays(seed, 0.15, func(t time.Time) float64 {
			v := daily(2000)(t)
			if !t.Before(fall) {
				v *= 0.4
			}
			return v
		}))
		got := s.run(t, r, monday.Add(7*24*time.Hour))
		fires := 0
		for _, m := range got {
			switch {
			case strings.HasPrefix(m, "fire up"):
				t.Errorf("draw %d: %q: the page only fell", seed, m)
			case strings.HasPrefix(m, "fire down"):
				fires++
			case strings.HasPrefix(m, "resolve down") && !strings.HasSuffix(m, " not back"):
				falsely++
				t.Logf("draw %d: %q", seed, m)
			}
		}
		if fires != 1 {
			t.Errorf("draw %d: %d drops told, want 1: %q", seed, fires, got)
		}
	}
	if falsely > 0 {
		t.Errorf("%d draws of 8 told back to normal, still at 0.4", falsely)
	}
}

// A site swamped by a surge, then down: 3 hours at 4 ×, then 4 hours at
// 5 %. The surge resolved ("back to normal" while the page was at a
// twentieth of its range) 3 hours after it ended, its hours together
// still past theirs, and its drop's down_for began only then: the
// outage, over an hour later, was never told. Its drop's down_for now
// runs from when the page fell under its drop level, the surge open
// (Episode.Under): it is told as the surge resolves.
func TestUnusualSurgeThenOutageIsTold(t *testing.T) {
	r := unusualRule(t, Unusual{})
	day := monday.Add(30*24*time.Hour + 10*time.Hour)
	s := newSynth(monday, 32, 3, func(t time.Time) float64 {
		v := daily(1000)(t)
		switch {
		case !t.Before(day) && t.Before(day.Add(3*time.Hour)):
			v *= 4
		case !t.Before(day.Add(3*time.Hour)) && t.Before(day.Add(7*time.Hour)):
			v *= 0.05
		}
		return v
	})
	got := s.run(t, r, monday.Add(28*24*time.Hour))
	want := []string{"fire up 04-01 Wed 10:10", "resolve up 04-01 Wed 16:00", "fire down 04-01 Wed 16:10", "resolve down 04-01 Wed 18:50"}
	wantMessages(t, got, want)
}
