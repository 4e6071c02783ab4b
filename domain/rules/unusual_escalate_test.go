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
// A sudden surge heard on its first minutes is not told rising as its
// hour fills at the rate it fired at.
func TestUnusualEscalatesOnlyOnARise(t *testing.T) {
	day := monday.Add(29 * 24 * time.Hour)
	in := func(t time.Time, from, to time.Duration) bool {
		return !t.Before(day.Add(from)) && t.Before(day.Add(to))
	}
	morning := func(after float64) func(time.Time) float64 {
		return func(t time.Time) float64 {
			switch {
			case in(t, 7*time.Hour, 8*time.Hour):
				return 2400
			case in(t, 8*time.Hour, 9*time.Hour+30*time.Minute):
				return after
			case t.Hour() < 8:
				return 600
			}
			return 60
		}
	}
	for _, tc := range []struct {
		name string
		rate func(time.Time) float64
		want []string
	}{
		{"steady", morning(2400), []string{"fire up 03-31 Tue 07:10", "resolve up 03-31 Tue 13:30"}},
		{"rising", morning(12000), []string{"fire up 03-31 Tue 07:10", "escalate up 03-31 Tue 08:10", "resolve up 03-31 Tue 13:30"}},
		// 10 × at once on a page of 600 an hour, heard on its first 10
		// minutes: its hour fills to 6,000, 4 × the hour's count when it
		// fired, at the rate it fired at.
		{"sudden", func(t time.Time) float64 {
			if in(t, 12*time.Hour, 13*time.Hour) {
				return 6000
			}
			return 600
		}, []string{"fire up 03-31 Tue 12:10", "resolve up 03-31 Tue 15:00"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := unusualRule(t, Unusual{})
			r.Escalate = []float64{4}
			s := newSynth(monday, 31, 5, tc.rate)
			got := s.run(t, r, day)
			wantMessages(t, got, tc.want)
		})
	}
}
