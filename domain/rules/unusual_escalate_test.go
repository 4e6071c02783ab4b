package rules

import (
	"testing"
	"time"
)

// A surge's escalate steps are multiples of the level it fired at
// (Episode.FiredLevel), not of the level its later hours are judged at.
// On a morning page (600 views an hour to 8:00, 60 after) a surge of
// 2,400 an hour from 7:00 to 9:30 was told "rose to 4× the level it
// fired at" at 9:00, its hour's count the same 2,400 as at 8:00: the
// 8:00 hour's normal is a tenth of the 7:00 hour's. It is told once
// now; the same surge jumping to 12,000 an hour at 8:00 is told rising.
func TestUnusualEscalatesOnlyOnARise(t *testing.T) {
	day := monday.Add(29 * 24 * time.Hour)
	for _, tc := range []struct {
		name  string
		after float64 // the surge's rate from 8:00
		want  []string
	}{
		{"steady", 2400, []string{"fire up 03-31 Tue 07:10", "resolve up 03-31 Tue 13:30"}},
		{"rising", 12000, []string{"fire up 03-31 Tue 07:10", "escalate up 03-31 Tue 08:10", "resolve up 03-31 Tue 13:30"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := unusualRule(t, Unusual{})
			r.Escalate = []float64{4}
			s := newSynth(monday, 31, 5, func(t time.Time) float64 {
				switch {
				case !t.Before(day.Add(7*time.Hour)) && t.Before(day.Add(8*time.Hour)):
					return 2400
				case !t.Before(day.Add(8*time.Hour)) && t.Before(day.Add(9*time.Hour+30*time.Minute)):
					return tc.after
				case t.Hour() < 8:
					return 600
				}
				return 60
			})
			got := s.run(t, r, day)
			wantMessages(t, got, tc.want)
		})
	}
}
