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
