package rules

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// stepThenSurge is a page of daily(2000) that rises step × for good on
// the Wednesday of its 5th week at 12:00, and surges surge × on top of
// that for 4 hours gap days later from 10:00.
func stepThenSurge(step, surge float64, gap int) (*synth, time.Time) {
	rise := monday.Add(30*24*time.Hour + 12*time.Hour)
	at := rise.Add(time.Duration(gap)*24*time.Hour - 2*time.Hour)
	return newSynth(monday, 30+25, 43, func(t time.Time) float64 {
		v := daily(2000)(t)
		if !t.Before(rise) {
			v *= step
		}
		if !t.Before(at) && t.Before(at.Add(4*time.Hour)) {
			v *= surge
		}
		return v
	}), at
}

// A page that rose for good, and surges on top of its new level days
// later, is told the surge. Before, its rise's episode stayed open until
// its normal followed it (2 to 3 weeks), and a surge in it had to reach
// escalate's 4 × the level it fired at, measured against its own
// remembered bursts, which its new level was: a rise of 3 × with a surge
// of 5 × on top (15 × its old normal) was not told. Now a surge as high
// two days running is a new level: its episode resolves "not back", and
// the page is judged at that level (unusual_level.go).
func TestUnusualSurgeOnANewLevelIsHeard(t *testing.T) {
	r := unusualRule(t, Unusual{})
	s, _ := stepThenSurge(3, 5, 5)
	wantMessages(t, s.run(t, r, monday.Add(24*time.Hour)), []string{
		"fire up 04-01 Wed 12:10",
		"resolve up 04-03 Fri 12:10 not back", // as high Thursday and Friday: its new level
		"fire up 04-06 Mon 10:20",
		"resolve up 04-06 Mon 17:50",
	})
	if a := s.against[2]; a.Baseline < 2*daily(2000)(monday.Add(10*time.Hour)) {
		t.Errorf("the surge on its new level was measured against %.0f, its old normal", a.Baseline)
	}
	for _, step := range []float64{2, 3} {
		for _, surge := range []float64{2, 3, 5} {
			for _, gap := range []int{2, 5, 10} {
				t.Run(fmt.Sprintf("step %g surge %g gap %d", step, surge, gap), func(t *testing.T) {
					s, at := stepThenSurge(step, surge, gap)
					got := s.run(t, r, monday.Add(24*time.Hour))
					heard, level := false, 0
					for _, m := range got {
						if strings.HasSuffix(m, "not back") {
							level++
						}
						if w, err := time.Parse("01-02 Mon 15:04", strings.TrimPrefix(m, "fire up ")); err == nil && strings.HasPrefix(m, "fire up") {
							w = w.AddDate(at.Year(), 0, 0)
							heard = heard || (!w.Before(at) && w.Before(at.Add(6*time.Hour)))
						}
					}
					if !heard || level != 1 {
						t.Errorf("surge from %s heard %v, new levels %d:\n%s", at.Format("01-02 15:04"), heard, level, strings.Join(got, "\n"))
					}
				})
			}
		}
	}
}

// A surge that fades (a launch settling: 6 × its normal at first, half
// as far above it a day later) is not as high two days running: one
// episode to its end, no new level.
func TestUnusualFadingSurgeIsNoNewLevel(t *testing.T) {
	r := unusualRule(t, Unusual{})
	rise := monday.Add(30*24*time.Hour + 12*time.Hour)
	s := newSynth(monday, 40, 43, func(t time.Time) float64 {
		v := daily(2000)(t)
		if d := t.Sub(rise); d >= 0 {
			v *= 1 + 5*math.Exp(-d.Hours()/24)
		}
		return v
	})
	for _, m := range s.run(t, r, monday.Add(24*time.Hour)) {
		if strings.HasSuffix(m, "not back") || strings.HasSuffix(m, "from its level") {
			t.Errorf("a fading surge read as a new level: %s", m)
		}
	}
}

// The normal's median read at a new level: the weeks before the rise
// carried by a trend the rise bent (20 % a week, none at the rise).
func TestLevelScaleModelsTheMedian(t *testing.T) {
	since := monday
	l := &Raised{Steps: []LevelStep{{Since: since, Ratio: 2.5}}}
	for _, c := range []struct {
		name      string
		weeksBack int     // of the normal's 4 weeks, how many lie after the rise
		trend     float64 // now
		want      float64
		straddles bool
	}{
		{"one week after, no trend", 1, 0, 2.5, true},
		{"two after, no trend: the mean of one of each", 2, 0, 2 * 2.5 / 3.5, true},
		// The middle two are the weeks 3 and 4 back, carried 1.2³ and
		// 1.2⁴ (the week after, 2.5 × 1.2, is the highest).
		{"one after, the trend bent", 1, 0.2, 2.5 / ((1.2*1.2*1.2 + 1.2*1.2*1.2*1.2) / 2), true},
		// Its weeks all after the rise: its own normal, the bent trend
		// left in (taken out, a page that grows was read as one that
		// does not, and told taking off again).
		{"all four after, the trend still bent", 4, 0.2, 1, false},
	} {
		at := since.Add(time.Duration(c.weeksBack)*7*24*time.Hour + 2*time.Hour)
		e := Expected{OK: true, WeeksBack: 4, Trend: c.trend}
		k, straddles, _ := levelScale(e, time.Hour, at, l)
		if math.Abs(k-c.want) > 1e-9 || straddles != c.straddles {
			t.Errorf("%s: scale %.3f straddles %v, want %.3f %v", c.name, k, straddles, c.want, c.straddles)
		}
	}
	// Past the trend's days, all after: its own normal.
	e := Expected{OK: true, WeeksBack: 4, Trend: 0.2}
	if k, _, bent := levelScale(e, time.Hour, since.Add(bentFor+time.Hour), l); k != 1 || bent {
		t.Errorf("long after: scale %.3f bent %v, want 1 false", k, bent)
	}
}

// A page's state keeps its new level and its surge's days across a
// restart (the KV store holds JSON).
func TestUnusualLevelStateRoundTrips(t *testing.T) {
	ep := &Episode{Since: monday, Peak: 10, PeakAt: monday, Days: Days{DayFrom: monday, HourAt: monday.Add(time.Hour), NHours: 2, LastDay: 2.5},
		RunDays: 1, RunLow: 2.5, RunHigh: 2.5, Down: true, Began: monday.Add(-3 * time.Hour), Depth: 0.3, Young: 2.2}
	ep.Hours[0], ep.Hours[1] = 2.4, 2.6
	st := State{Open: ep, Raised: &Raised{Steps: []LevelStep{{Since: monday, Ratio: 2.5}, {Since: monday.Add(240 * time.Hour), Ratio: 5}},
		Trend: 0.1, Noise: 0.03, Episode: 3, Days: Days{DayFrom: monday, NHours: 1, LastDay: 1.1}}}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	// The days are written as they were before they were one struct: a
	// state written by an older sweeper reads back.
	for _, key := range []string{`"day_from"`, `"hour_at"`, `"n_hours"`, `"last_day"`, `"young"`} {
		if strings.Count(string(b), key) < 1 || strings.Contains(string(b), `"Days"`) {
			t.Errorf("state JSON lacks %s at its episode's top: %s", key, b)
		}
	}
	var got State
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !sameEpisode(got.Open, st.Open) || !sameRaised(got.Raised, st.Raised) {
		t.Errorf("round trip: %s", b)
	}
	if b, _ := json.Marshal(State{Open: &Episode{Since: monday}}); strings.Contains(string(b), "hours") {
		t.Errorf("an episode with no hours read writes them: %s", b)
	}
}

// risen is a page of daily(2000) that rises 2.5 × for good on the
// Wednesday of its 5th week at noon, then changes by change(t) (1: none).
func risen(change func(t time.Time) float64) *synth {
	rise := monday.Add(30*24*time.Hour + 12*time.Hour)
	return newSynth(monday, 30+25, 43, func(t time.Time) float64 {
		v := daily(2000)(t)
		if !t.Before(rise) {
			v *= 2.5
		}
		return v * change(t)
	})
}

// A page at its new level that stops for 6 hours (an outage) is told
// gone quiet and back, against the level: not "back to its old level"
// (a count of 0 is under its old range too), and not taking off again
// when it comes back (its level ended, a page at 2.5 × its old normal
// was news).
func TestUnusualOutageOfANewLevelIsADropNotItsEnd(t *testing.T) {
	r := unusualRule(t, Unusual{})
	out := monday.Add(38*24*time.Hour + 10*time.Hour)
	s := risen(func(t time.Time) float64 {
		if !t.Before(out) && t.Before(out.Add(6*time.Hour)) {
			return 0
		}
		return 1
	})
	wantMessages(t, s.run(t, r, monday.Add(24*time.Hour)), []string{
		"fire up 04-01 Wed 12:10",
		"resolve up 04-03 Fri 12:10 not back",
		"fire down 04-09 Thu 13:00", // down_for and its window after 10:00, from its old normal: under its old range too
		"resolve down 04-09 Thu 17:50",
	})
}

// Data late for 4 hours (hits not loaded: the page at a third of its
// level) says nothing of where the page is: its level does not end.
func TestUnusualLateDataDoesNotEndANewLevel(t *testing.T) {
	r := unusualRule(t, Unusual{})
	from := monday.Add(38*24*time.Hour + 10*time.Hour)
	s := risen(func(t time.Time) float64 {
		if !t.Before(from) && t.Before(from.Add(3*time.Hour)) {
			return 0.3
		}
		return 1
	})
	s.late = func(at time.Time) bool { return at.After(from) && !at.After(from.Add(4*time.Hour)) }
	wantMessages(t, s.run(t, r, monday.Add(24*time.Hour)), []string{
		"fire up 04-01 Wed 12:10",
		"resolve up 04-03 Fri 12:10 not back",
	})
}

// A page that rises again on its new level (3 ×, then 3 × that 10 days
// later) is told each rise and each new level, and then nothing: its
// level is the product, read from each step's weeks at that step's
// level. (Kept as one step from the first rise, the page was read at
// 9 × from its first week, and told taking off and "22 ×" after.)
func TestUnusualARiseOnANewLevel(t *testing.T) {
	r := unusualRule(t, Unusual{})
	again := monday.Add(40*24*time.Hour + 12*time.Hour)
	rise := monday.Add(30*24*time.Hour + 12*time.Hour)
	s := newSynth(monday, 30+25, 43, func(t time.Time) float64 {
		v := daily(2000)(t)
		if !t.Before(rise) {
			v *= 3
		}
		if !t.Before(again) {
			v *= 3
		}
		return v
	})
	wantMessages(t, s.run(t, r, monday.Add(24*time.Hour)), []string{
		"fire up 04-01 Wed 12:10",
		"resolve up 04-03 Fri 12:10 not back",
		"fire up 04-11 Sat 12:30",
		"resolve up 04-13 Mon 12:30 not back",
	})
	if a := s.against[3]; a.Baseline <= 0 {
		t.Errorf("its second level: %+v", a)
	}
}

// A level's end is keyed by the episode that raised it: a later episode
// (here a drop, judged against its old normal) may be open when it
// ends, and raise a level of its own, whose end is then another crossing,
// not the same key again. Ended, the level is a step back to 1, which
// its normal is read down from; a drop open the way it went back closes
// with it. Changing only the level's state (back at its old level, not
// yet for levelBack) stamps Seen: a replayed look before it must not
// undo it.
func TestUnusualLevelEndIsKeyedByItsEpisode(t *testing.T) {
	r := unusualRule(t, Unusual{})
	at := monday.Add(40 * 24 * time.Hour)
	e := Expected{OK: true, Value: 100, Top: 100, Bottom: 100, Low: 80, High: 120, Dispersion: 0.001, Samples: 4, WeeksBack: 4, Weekly: true}
	level := &Raised{Steps: []LevelStep{{Since: at.Add(-10 * 24 * time.Hour), Ratio: 2.5}}, Noise: 0.001, Episode: 2}
	ep := &Episode{Since: at.Add(-7 * time.Hour), Peak: 90, PeakAt: at.Add(-7 * time.Hour), Down: true}
	next, fire := r.StepEpisode(State{Episode: 3, Open: ep, Raised: level}, Observation{At: at.Add(-6 * time.Hour), Count: 100, Expected: e})
	if len(fire) != 0 || next.Raised == nil || !next.Raised.Back.Equal(at.Add(-6*time.Hour)) || !next.Seen.Equal(at.Add(-6*time.Hour)) {
		t.Fatalf("back at its old level: fired %v, level %+v, seen %s", fire, next.Raised, next.Seen)
	}
	next, fire = r.StepEpisode(next, Observation{At: at, Count: 100, Expected: e})
	var keys []string
	for _, f := range fire {
		keys = append(keys, f.Key)
	}
	if !slices.Equal(keys, []string{"2.level.resolved"}) || next.Raised == nil || !next.Raised.Ended || next.Raised.Ratio() != 1 || next.Open != nil {
		t.Errorf("back for levelBack: keys %v, level %+v, open %+v; want 2.level.resolved, ended, the drop closed", keys, next.Raised, next.Open)
	}
	if len(fire) == 1 && (!fire[0].LevelEnded || fire[0].Raised != 2.5) {
		t.Errorf("its end: %+v, want the level it left, 2.5", fire[0])
	}
}

// A page whose weekends (from Friday noon) run at 3 × its weekdays, in
// its first week: its first weekend is a surge (its normal does not
// know the week yet), not a new level "judged at from now" and then
// "back to its old level" on the Monday.
func TestUnusualFirstWeekendIsNoNewLevel(t *testing.T) {
	r := unusualRule(t, Unusual{})
	s := newSynth(monday, 35, 1, func(t time.Time) float64 {
		v := daily(2000)(t)
		if wd := t.Weekday(); wd == time.Saturday || wd == time.Sunday || (wd == time.Friday && t.Hour() >= 12) {
			v *= 3
		}
		return v
	})
	for _, m := range s.run(t, r, monday.Add(24*time.Hour)) {
		if strings.HasSuffix(m, "not back") || strings.HasSuffix(m, "from its level") {
			t.Errorf("a first weekend read as a new level: %s", m)
		}
	}
}

// A page at a new level for 25 days, then back at its old level: told
// back within hours (levelBack at a stretch), and not gone quiet after,
// while its normal still reads the weeks of its rise (read down from
// them: its level ended is a step back to 1). Before, its old range was
// read from a normal that those weeks lifted: the end came days late or
// never, and a drop was told in its place; and once ended, a page back
// where it was was told gone quiet from a normal still lifted by the
// rise.
func TestUnusualLongLevelEndsWhenBack(t *testing.T) {
	r := unusualRule(t, Unusual{})
	back := monday.Add(55*24*time.Hour + 12*time.Hour)
	rise := monday.Add(30*24*time.Hour + 12*time.Hour)
	s := newSynth(monday, 80, 43, func(t time.Time) float64 {
		v := daily(2000)(t)
		if !t.Before(rise) && t.Before(back) {
			v *= 2.5
		}
		return v
	})
	wantMessages(t, s.run(t, r, monday.Add(24*time.Hour)), []string{
		"fire up 04-01 Wed 12:10",
		"resolve up 04-03 Fri 12:10 not back",
		"resolve up 04-26 Sun 18:50 from its level", // back at 12:00, 6 hours at a stretch from 12:50
	})
}

// A page at a new level of 3 × that falls to 2.1 × (a link on a home
// page moved down it) is not back at its old level: nothing said of its
// level ending (before: "back to its old level", its normal lifted by
// the rise's weeks reading 2.1 × as inside its old range).
func TestUnusualPartFallIsNotBackAtItsOldLevel(t *testing.T) {
	r := unusualRule(t, Unusual{})
	rise := monday.Add(30*24*time.Hour + 12*time.Hour)
	fall := rise.Add(5 * 24 * time.Hour)
	s := newSynth(monday, 60, 43, func(t time.Time) float64 {
		v := daily(2000)(t)
		if !t.Before(rise) {
			v *= 3
		}
		if !t.Before(fall) {
			v *= 0.7
		}
		return v
	})
	for _, m := range s.run(t, r, monday.Add(24*time.Hour)) {
		if strings.HasSuffix(m, "from its level") {
			t.Errorf("at 2.1 × its old normal, told back at it: %s", m)
		}
	}
}
