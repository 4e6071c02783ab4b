package rules

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// A page that rises for good in its second or third week, before it has
// the 3 weeks of history a new level needs, is told once: its normal
// follows it in days ("not back"), and the level its first two days held
// is kept (Episode.Young) for when its normal reads past weeks alone.
// Before, those weeks (most of them from before the rise) read it back
// at its old level: 13 of 72 such pages were told "taking off" again 9
// to 15 days on, and an outage a fortnight on was missed on every page
// of this test.
func TestUnusualYoungPageUpForGoodIsToldOnce(t *testing.T) {
	for _, c := range []struct {
		day    int
		times  float64
		seed   uint64
		fire   string
		resolv string
	}{
		{8, 3, 1, "fire up 03-10 Tue 12:10", "resolve up 03-14 Sat 14:00 not back"},
		{8, 2, 3, "fire up 03-10 Tue 12:10", "resolve up 03-14 Sat 14:00 not back"},
		{12, 2, 1, "fire up 03-14 Sat 12:10", "resolve up 03-19 Thu 08:00 not back"},
		{14, 3, 1, "fire up 03-16 Mon 12:10", "resolve up 03-20 Fri 13:10 not back"},
	} {
		t.Run(fmt.Sprintf("day%d_x%g", c.day, c.times), func(t *testing.T) {
			r := unusualRule(t, Unusual{})
			rise := monday.Add(time.Duration(c.day)*24*time.Hour + 12*time.Hour)
			s := newSynth(monday, c.day+25, c.seed, func(t time.Time) float64 {
				if !t.Before(rise) {
					return c.times * daily(2000)(t)
				}
				return daily(2000)(t)
			})
			wantMessages(t, s.run(t, r, monday.Add(24*time.Hour)), []string{c.fire, c.resolv})
		})
	}
}

// On such a page, a surge and an outage weeks after its rise are heard
// (the outage was missed). Its return to its old level is not told so.
func TestUnusualYoungPageAtItsLevel(t *testing.T) {
	rise := monday.Add(10*24*time.Hour + 12*time.Hour)
	surge := monday.Add(24*24*time.Hour + 13*time.Hour)
	outage := monday.Add(28*24*time.Hour + 11*time.Hour)
	risen := []string{"fire up 03-12 Thu 12:10", "resolve up 03-16 Mon 08:10 not back"}

	t.Run("events", func(t *testing.T) {
		s := newSynth(monday, 35, 1, func(t time.Time) float64 {
			v := daily(2000)(t)
			if !t.Before(rise) {
				v *= 2
			}
			if within(t, []time.Time{surge}, 3*time.Hour) {
				v *= 4
			}
			if within(t, []time.Time{outage}, 4*time.Hour) {
				v *= 0.05
			}
			return v
		})
		want := append(slices.Clone(risen),
			"fire up 03-26 Thu 13:30", "resolve up 03-26 Thu 19:40",
			"fire down 03-30 Mon 14:00", "resolve down 03-30 Mon 16:20")
		wantMessages(t, s.run(t, unusualRule(t, Unusual{}), monday.Add(24*time.Hour)), want)
	})
	for _, c := range []struct {
		day  int
		want []string
	}{
		// Back before its normal reads past weeks: its level was never
		// seen at once it could be told from its old one, and is
		// dropped, untold (a campaign of two days or a lull of five
		// were read as young levels, and told "back to its old level"
		// a week late, then false drops for days).
		{20, risen},
		// Back after, its level seen at: its days at its old level end
		// it, silently, as every young level's end (a young level is
		// dated from its episode, which may have fired days after the
		// page stepped; on a page with quiet weekends its weekend a week
		// on read as two days at its old level, and ended it with
		// "back to its old level" and "taking off" again each week).
		// The page is then judged as before young levels: its normal,
		// read from weeks most of which were at the level, tells it
		// gone quiet 6 days on ("Not done yet").
		{25, append(slices.Clone(risen), "fire down 04-02 Thu 22:00")},
	} {
		t.Run(fmt.Sprintf("back on day %d", c.day), func(t *testing.T) {
			back := monday.Add(time.Duration(c.day)*24*time.Hour + 12*time.Hour)
			s := newSynth(monday, 35, 1, func(t time.Time) float64 {
				if !t.Before(rise) && t.Before(back) {
					return 2 * daily(2000)(t)
				}
				return daily(2000)(t)
			})
			wantMessages(t, s.run(t, unusualRule(t, Unusual{}), monday.Add(24*time.Hour)), c.want)
		})
	}
}

// A page that falls for good in its second or third week keeps its
// level too (its first two days', Episode.Young): a surge of 4 × its new
// level two weeks on is heard. Before, its normal read from weeks on
// both sides of the fall, their spread the fall's, and the surge was
// missed on 18 of 24 draws (falls on its 9th to 15th day). Into its old
// range, at 0.3, the surge is judged against its old normal and resolved
// within the hour and a half (as on any lower level); at 0.5, past its
// old range, it resolves hours after it ends (TestUnusualSurgeOnALowerLevelEnds).
func TestUnusualYoungPageFallenForGood(t *testing.T) {
	for _, c := range []struct {
		day  int
		step float64
		want []string
	}{
		{10, 0.3, []string{"fire down 03-12 Thu 14:50", "resolve down 03-15 Sun 14:00 not back", "fire up 04-01 Wed 13:10", "resolve up 04-01 Wed 14:20"}},
		{14, 0.3, []string{"fire down 03-16 Mon 14:50", "resolve down 03-20 Fri 13:10 not back", "fire up 04-01 Wed 13:10", "resolve up 04-01 Wed 14:20"}},
		{12, 0.5, []string{"fire down 03-14 Sat 15:00", "resolve down 03-17 Tue 22:10 not back", "fire up 04-01 Wed 13:10", "resolve up 04-01 Wed 18:40"}},
	} {
		t.Run(fmt.Sprintf("day%d_x%g", c.day, c.step), func(t *testing.T) {
			fall := monday.Add(time.Duration(c.day)*24*time.Hour + 12*time.Hour)
			surge := monday.Add(30*24*time.Hour + 13*time.Hour)
			s := newSynth(monday, 35, 1, func(t time.Time) float64 {
				v := daily(2000)(t)
				if !t.Before(fall) {
					v *= c.step
				}
				if within(t, []time.Time{surge}, 3*time.Hour) {
					v *= 4
				}
				return v
			})
			got := s.run(t, unusualRule(t, Unusual{}), monday.Add(24*time.Hour))
			wantMessages(t, got, c.want)
		})
	}
}

// A page with weekends at 30 % that doubles on a Sunday is told on the
// Monday and back in its range (under its middle) on a Friday morning:
// its episode resolves back, not "not back", and its young level is
// still kept as a guess (its normal had followed it), seen at a week
// on. Kept only for "not back", it was told taking off again a week
// after its normal read past weeks (a review's 2 draws of 6).
func TestUnusualYoungPageRisenOnItsQuietWeekend(t *testing.T) {
	rise := monday.Add(13*24*time.Hour + 12*time.Hour)
	for _, seed := range []uint64{2, 3} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			s := newSynth(monday, 40, seed, func(t time.Time) float64 {
				v := daily(2000)(t)
				if wd := t.Weekday(); wd == time.Saturday || wd == time.Sunday {
					v *= 0.3
				}
				if !t.Before(rise) {
					v *= 2
				}
				return v
			})
			got := s.run(t, unusualRule(t, Unusual{}), monday.Add(24*time.Hour))
			if len(got) != 2 || !strings.HasPrefix(got[0], "fire up 03-16 Mon") || !strings.HasPrefix(got[1], "resolve up 03-20 Fri") {
				t.Errorf("got %q: want its rise told on the Monday, back on the Friday, and nothing more", got)
			}
		})
	}
}
