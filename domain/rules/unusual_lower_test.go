package rules

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// fallThen is a page of daily(2000) that falls to step × for good on
// the Wednesday of its 5th week at 12:00, and changes by ev × on top of
// that for 4 hours gap days later from 10:00 (stepThenSurge).
func fallThen(step, ev float64, gap int) *synth {
	s, _ := stepThenSurge(step, ev, gap)
	return s
}

// A page that falls for good (a search ranking lost) is told once, and
// 10 days on "has stayed down": a lower level, which it is judged at
// from now (unusual_level.go). A surge or an outage on top of it is heard,
// once each. Before, its drop stayed open two weeks, until its normal
// followed it: a surge of 3 × on top was told "back to normal" and then
// "gone quiet" again, and an outage on top was not told at all.
func TestUnusualEventsOnALowerLevelAreHeard(t *testing.T) {
	r := unusualRule(t, Unusual{})
	wantMessages(t, fallThen(0.4, 3, 13).run(t, r, monday.Add(24*time.Hour)), []string{
		"fire down 04-01 Wed 15:00",
		"resolve down 04-11 Sat 15:00 not back", // 10 days at 0.4: its lower level
		"fire up 04-14 Tue 10:10",
		"resolve up 04-14 Tue 11:20", // in its old range: judged against its old normal
	})
	for _, step := range []float64{0.4, 0.3} {
		for _, ev := range []float64{3, 0.15} {
			for _, gap := range []int{13, 16} {
				t.Run(fmt.Sprintf("step %g event %g gap %d", step, ev, gap), func(t *testing.T) {
					got := fallThen(step, ev, gap).run(t, r, monday.Add(24*time.Hour))
					dir := "up"
					if ev < 1 {
						dir = "down"
					}
					if len(got) < 4 || got[1][:len("resolve down 04-11")] != "resolve down 04-11" || !strings.HasPrefix(got[2], "fire "+dir) {
						t.Errorf("got %q: want its fall, its level 10 days on, and the %s on top told", got, dir)
					}
				})
			}
		}
	}
}

// A surge on a page that fell, before its fall has held 10 days, breaks
// its drop for hours, not its fall: the drop told again after it began
// with the first (Episode.Began, State.PrevBegan), and its normal is
// read as having followed it from then: "not back" two weeks after the
// fall, and nothing after. Read from the second drop alone, its normal
// had not followed it: it was told back to normal on 04-18, gone quiet
// again on 04-21, and (with a level from the second drop) taking off
// twice a fortnight on.
func TestUnusualSurgeBreakingAFallDatesItsLevel(t *testing.T) {
	r := unusualRule(t, Unusual{})
	wantMessages(t, fallThen(0.3, 3, 6).run(t, r, monday.Add(24*time.Hour)), []string{
		"fire down 04-01 Wed 14:50",
		"resolve down 04-07 Tue 11:40", // the surge: back in its old range
		"fire down 04-07 Tue 16:50",
		"resolve down 04-15 Wed 14:00 not back",
	})
}

// A page back at its old level after two weeks at a lower one of 0.4:
// judged against its old normal there, it is told nothing false, and two
// days on, its days holding one level 2.5 × its lower one, its level
// moves back there and ends: "back to its old level" (followLevel). Its
// two ranges meet at every hour of it, so 6 hours back at hours that can
// tell never came.
func TestUnusualBackFromALowerLevel(t *testing.T) {
	r := unusualRule(t, Unusual{})
	fall := monday.Add(30*24*time.Hour + 12*time.Hour)
	s := newSynth(monday, 30+25, 43, func(t time.Time) float64 {
		v := daily(2000)(t)
		if !t.Before(fall) && t.Before(fall.Add(14*24*time.Hour)) {
			v *= 0.4
		}
		return v
	})
	wantMessages(t, s.run(t, r, monday.Add(24*time.Hour)), []string{
		"fire down 04-01 Wed 15:00",
		"resolve down 04-11 Sat 15:00 not back",
		"resolve up 04-17 Fri 15:00 from its level",
	})
}

// A lull of 10 days at half (a Christmas to New Year), with 3 days at a
// fifth in it, is one drop, not a lower level: its days vary, and a
// level set from its deepest (two days running, as a rise is set) told
// its days at half surges, outside their window, on 4 of 8 generated
// sites.
func TestUnusualHolidayLullIsNoLowerLevel(t *testing.T) {
	r := unusualRule(t, Unusual{})
	fall := monday.Add(30*24*time.Hour + 12*time.Hour)
	for seed := uint64(1); seed <= 3; seed++ {
		s := newSynth(monday, 30+25, seed, func(t time.Time) float64 {
			v := daily(2000)(t)
			switch d := t.Sub(fall).Hours() / 24; {
			case d >= 2 && d < 5:
				v *= 0.2
			case d >= 0 && d < 10:
				v *= 0.5
			}
			return v
		})
		got := s.run(t, r, monday.Add(24*time.Hour))
		if len(got) != 2 || got[1] != "resolve down 04-11 Sat 13:30" {
			t.Errorf("draw %d: %q, want one drop, back at its end", seed, got)
		}
	}
}

// A page at a new level of 2.5 × keeps it through an outage of 6 hours
// at 0.3 of it (0.75 × its old normal: inside its old range, judged
// against it, no news) and two days at 0.6 of it (1.5 ×: nearer its
// level). Ended on an hour back, a noisy page's level ended on a quiet
// hour and was set again every week, each time told "back to its old
// level" and then "taking off". (A day at 0.4 of it, its old level,
// ends it: not told apart from a return.)
func TestUnusualLevelOutlastsADip(t *testing.T) {
	r := unusualRule(t, Unusual{})
	rise := []string{"fire up 04-01 Wed 12:10", "resolve up 04-03 Fri 12:10 not back"}
	for _, c := range []struct {
		from, hours, f float64
		want           []string
	}{
		{8.4, 6, 0.3, nil},
		{9, 48, 0.6, nil},
	} {
		s := risen(func(t time.Time) float64 {
			if d := t.Sub(monday).Hours()/24 - 30; d >= c.from && d < c.from+c.hours/24 {
				return c.f
			}
			return 1
		})
		wantMessages(t, s.run(t, r, monday.Add(24*time.Hour)), append(rise, c.want...))
	}
}

// A page that rose 3 × for good and then fades back over three weeks (a
// launch decaying) is followed down (followLevel): its level moves with
// its days, silently; an outage and a surge a month after its rise are
// each told, and nothing else. Read as a step, its level held its
// normal at 3 ×, and a review's fades missed both on half their draws.
// (Its level need not end: it moves only when its days sit 1.5 × from
// it, so a fade may leave it a little over its old.)
func TestUnusualLevelFollowsAFade(t *testing.T) {
	r := unusualRule(t, Unusual{})
	rise := monday.Add(30*24*time.Hour + 12*time.Hour)
	fade := rise.Add(2 * 24 * time.Hour)
	out := monday.Add(63*24*time.Hour + 10*time.Hour)
	surge := monday.Add(66*24*time.Hour + 12*time.Hour)
	for seed := uint64(1); seed <= 3; seed++ {
		s := newSynth(monday, 70, seed, func(t time.Time) float64 {
			v := daily(2000)(t)
			switch f := t.Sub(fade).Hours() / 24 / 21; {
			case t.Before(rise):
			case f < 0:
				v *= 3
			case f < 1:
				v *= 3 - 2*f
			}
			if !t.Before(out) && t.Before(out.Add(6*time.Hour)) {
				v *= 0.05
			}
			if !t.Before(surge) && t.Before(surge.Add(4*time.Hour)) {
				v *= 3
			}
			return v
		})
		var fires []string
		for _, m := range s.run(t, r, monday.Add(24*time.Hour)) {
			if strings.HasPrefix(m, "fire") {
				f := strings.Fields(m)
				fires = append(fires, f[0]+" "+f[1]+" "+f[2])
			}
		}
		if want := "[fire up 04-01 fire down 05-04 fire up 05-07]"; fmt.Sprint(fires) != want {
			t.Errorf("draw %d: fired %q, want the rise, the outage of 4 May and the surge of 7 May", seed, fires)
		}
	}
}

// A surge on a page at a lower level of half its old one, past its old
// range, resolves hours after it ends. Its size was measured against the
// old normal it is judged by there (1.2 ×), and the level's hours, whose
// ranges would hold that, held it until the hold ran out: resolved 3
// days on. Now it is measured against the level it is at (Observation's
// levelTop).
func TestUnusualSurgeOnALowerLevelEnds(t *testing.T) {
	r := unusualRule(t, Unusual{})
	wantMessages(t, fallThen(0.5, 3, 13).run(t, r, monday.Add(24*time.Hour)), []string{
		"fire down 04-02 Thu 17:40",
		"resolve down 04-12 Sun 17:40 not back",
		"fire up 04-14 Tue 10:10",
		"resolve up 04-14 Tue 17:40", // 4 hours of it from 10:00, then its hours together back and an hour's settle
	})
}
