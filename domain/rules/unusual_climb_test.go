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

// The hour a burst's climb is read from is the one after the latest the
// normal reads, the same days back; a rule hearing no bursts reads none.
func TestUnusualClimbSpans(t *testing.T) {
	end := monday.Add(5*7*24*time.Hour + 14*time.Hour) // a Monday 14:00
	climbs := func(r *Rule, end time.Time) (n, all int) {
		for _, sp := range r.BaselineSpans(end, monday) {
			if sp.OfWindow() || sp.Tag >= longSpan {
				continue
			}
			n++
			k := sp.Tag - slopeSpan
			want := end.UTC().Truncate(time.Hour).Add(time.Hour)
			if !end.UTC().Truncate(time.Hour).Equal(end.UTC()) {
				want = want.Add(time.Hour)
			}
			if want = want.AddDate(0, 0, -k); !sp.To.Equal(want) || sp.To.Sub(sp.From) != r.Window.Rolling {
				t.Errorf("climb span %v (%d days back) of the window ending %s, want one ending %s", sp, k, end.Format("15:04"), want.Format("01-02 15:04"))
			}
		}
		return n, len(r.BaselineSpans(end, monday))
	}
	r := unusualRule(t, Unusual{})
	for _, c := range []struct {
		end        time.Time
		climb, all int
	}{{end, 10, 30}, {end.Add(10 * time.Minute), 10, 50}} {
		if n, all := climbs(r, c.end); n != c.climb || all != c.all {
			t.Errorf("window ending %s: %d climb spans of %d, want %d of %d", c.end.Format("15:04"), n, all, c.climb, c.all)
		}
	}
	off := time.Duration(0)
	for _, u := range []Unusual{{Direction: Down}, {Burst: &off}} {
		r := unusualRule(t, u)
		if n, _ := climbs(r, end.Add(10*time.Minute)); n != 0 {
			t.Errorf("%+v: %d climb spans, want none", u, n)
		}
	}
}

// burstTop reads the line from the latest hour's top, and only above the
// window's top; a sweep's window ends the minute after its instant.
func TestBurstTopReadsTheLine(t *testing.T) {
	noon := monday.Add(12 * time.Hour)
	for _, c := range []struct {
		name string
		o    Observation
		w    time.Duration
		want float64
	}{
		// The hour before 3,000, its own 2,000, the next 3,000: at 12:50
		// the line is at 2,333, under the window's top.
		{"a lunch dip", Observation{At: noon.Add(55 * time.Minute), Expected: Expected{Top: 3000, Rise: 1000, RiseFrom: 2000}}, time.Hour, 500},
		// A climb from 1,500 to 3,000: at 12:50, 2,000.
		{"a climb", Observation{At: noon.Add(55 * time.Minute), Expected: Expected{Top: 1500, Rise: 1500, RiseFrom: 1500}}, time.Hour, 2000.0 / 6},
		// Before the latest hour's middle the top stands.
		{"early in the hour", Observation{At: noon.Add(25 * time.Minute), Expected: Expected{Top: 1500, Rise: 1500, RiseFrom: 1500}}, time.Hour, 250},
		// A window ending on the hour reads on to the hour after it: at
		// 11:55, 1,500 + 1,500 × 25/60.
		{"on the hour", Observation{At: noon, Expected: Expected{Top: 1500, Rise: 1500, RiseFrom: 1500}}, time.Hour, 2125.0 / 6},
		// A sweep at 12:00:00 judges the window ending at 12:01: mid-hour,
		// the line not yet begun.
		{"a sweep at the hour", Observation{At: noon, End: noon.Add(time.Minute), Expected: Expected{Top: 1500, Rise: 1500, RiseFrom: 1500}}, time.Hour, 250},
		// 3 hours ending 14:00 (middle 12:30): at 13:55 the line is 85
		// minutes on, capped at the next window's middle an hour on.
		{"a 3-hour window", Observation{At: noon.Add(2 * time.Hour), Expected: Expected{Top: 4500, Rise: 900, RiseFrom: 4500}}, 3 * time.Hour, 5400.0 / 18},
	} {
		if got := burstTop(c.o, c.w, 10*time.Minute); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// A day's rhythm climbing from 6:00 to a peak at 15:00 or 21:00, read by
// readers in Kolkata (whose hours begin at :30 on UTC's clocks), weekends
// at 30 %, days a few percent apart, in a page's second and third weeks
// (whose weekdays' noise is the narrowest): a review found 13 and 12
// fires in 30 draws, on the rule's UTC clocks and on Kolkata's, each a
// burst late in a climbing hour. None now.
func TestUnusualBurstReadsADaysClimbOnAnyClock(t *testing.T) {
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	for _, zone := range []string{"UTC", "Asia/Kolkata"} {
		r := unusualRule(t, Unusual{})
		r.Zone = zone
		if err := r.Validate("rule"); err != nil {
			t.Fatal(err)
		}
		for _, shift := range []time.Duration{0, 6 * time.Hour} {
			for _, peak := range []float64{300, 3000} {
				for seed := uint64(1); seed <= 5; seed++ {
					levels := []float64{1.0, 0.88, 1.1, 0.95, 1.14, 0.92, 1.05}
					s := newSynth(monday, 21, seed, func(t time.Time) float64 {
						l := t.In(kolkata)
						v := daily(peak)(l.Add(-shift)) * levels[(l.YearDay()*3)%7]
						if wd := l.Weekday(); wd == time.Saturday || wd == time.Sunday {
							v *= 0.3
						}
						return v
					})
					if got := s.run(t, r, monday.Add(7*24*time.Hour)); len(got) > 0 {
						t.Errorf("rule on %s, peak at %v, %v views, draw %d: %s", zone, 15*time.Hour+shift, peak, seed, strings.Join(got, "; "))
					}
				}
			}
		}
	}
}
