package rules

import (
	"math"
	"strings"
	"testing"
	"time"
)

// office is a page of an office's hours on the clocks of loc: at a
// hundredth of its peak at night, climbing in a straight line from 8:00
// to its peak over climb, down again from 17:00 to 19:00, weekends at
// 30 %, days a few percent apart.
func office(loc *time.Location, peak float64, climb time.Duration) func(time.Time) float64 {
	return func(t time.Time) float64 {
		l := t.In(loc)
		h := float64(l.Hour()) + float64(l.Minute())/60
		night, c := peak/100, climb.Hours()
		v := night
		switch {
		case h >= 8 && h < 8+c:
			v = night + (peak-night)*(h-8)/c
		case h >= 8+c && h < 17:
			v = peak
		case h >= 17 && h < 19:
			v = peak - (peak-night)*(h-17)/2
		}
		if wd := l.Weekday(); wd == time.Saturday || wd == time.Sunday {
			v *= 0.3
		}
		return v * (1 + 0.05*math.Sin(float64(l.YearDay())))
	}
}

// A burst's minutes late in an hour the page climbs through are its
// mornings, not a surge: measured against its hour spread evenly, the
// 10 minutes before 9:00 of a page climbing from 8:00 were 1.6 to 1.8
// times their share, and each busy page was told a surge of its own
// morning once or twice in its first weeks (24 fires on these 72 pages
// before). Pages in Kolkata, whose hours begin at :30 on the rule's UTC
// clocks, climb through the middle of a UTC hour. Judged every 5
// minutes, as a backtest of 5-minute rows is.
func TestUnusualBurstReadsTheMorningsClimb(t *testing.T) {
	r := unusualRule(t, Unusual{})
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	for _, loc := range []*time.Location{time.UTC, kolkata} {
		for _, climb := range []time.Duration{time.Hour, 3 * time.Hour} {
			for _, peak := range []float64{3000, 30000} {
				for seed := uint64(1); seed <= 3; seed++ {
					s := newSynth(monday, 35, seed, office(loc, peak, climb))
					got := s.runEvery(t, r, monday.Add(24*time.Hour), 5*time.Minute)
					if len(got) > 0 {
						t.Errorf("%s, climbing over %v to %v views an hour, draw %d: %s", loc, climb, peak, seed, strings.Join(got, "; "))
					}
				}
			}
		}
	}
}

// The climb raises a burst's bar by how the page climbs, not past a
// surge: 10 minutes at 6 × in the last of a climbing hour are heard.
func TestUnusualBurstInAClimbIsHeard(t *testing.T) {
	r := unusualRule(t, Unusual{})
	at := monday.Add(3*7*24*time.Hour + 2*24*time.Hour + 8*time.Hour + 40*time.Minute) // the 4th Wednesday, 8:40
	for _, peak := range []float64{3000, 30000} {
		s := newSynth(monday, 28, 1, func(t time.Time) float64 {
			v := office(time.UTC, peak, 3*time.Hour)(t)
			if !t.Before(at) && t.Before(at.Add(10*time.Minute)) {
				v *= 6
			}
			return v
		})
		// Heard 5 minutes in; over when its hour is back in its range
		// and has stayed there the rule's settle.
		wantMessages(t, s.runEvery(t, r, monday.Add(24*time.Hour), 5*time.Minute), []string{"fire up 03-25 Wed 08:45", "resolve up 03-25 Wed 10:05"})
	}
}
