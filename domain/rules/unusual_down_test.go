package rules

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// holiday is daily(peak) with the Thursday of the 4th week at share of
// it.
func holiday(peak, share float64) func(time.Time) float64 {
	day := monday.Add(24 * 24 * time.Hour)
	return func(t time.Time) float64 {
		v := daily(peak)(t)
		if !t.Before(day) && t.Before(day.Add(24*time.Hour)) {
			v *= share
		}
		return v
	}
}

func TestUnusualHolidayDropFiresAndResolves(t *testing.T) {
	r := unusualRule(t, Unusual{})
	s := newSynth(monday, 28, 3, holiday(200, 0.25))
	got := s.run(t, r, monday.Add(7*24*time.Hour))
	// The night's 10 views an hour falling to 2.5 prove nothing; by 7:00
	// its hours together are far below theirs (Reach.Long), and after
	// down_for (2h) it fires (at 10:00 on the hour alone, at 14:00 while
	// the lower tail was the square root's, which asked a fall far
	// beyond the count's noise, and sweeps just above that level started
	// the 2 hours again). Since a drop asks 0.9 × the sensitivity its
	// hour is past its level too, and it is told as the hour's: the
	// holiday ends at midnight, the night's normal under min_count holds
	// it until the morning's can tell, back at 7:00, resolved after
	// settle (1h) at 8:00. (Told as its hours', it was back in their
	// range by 2:10 and resolved at 3:10.)
	want := []string{"fire down 03-26 Thu 09:00", "resolve down 03-27 Fri 08:00"}
	wantMessages(t, got, want)
}

// A drop that hovers at its level is one drop lasting: a sweep that
// finds it a few views above the level, still far under the usual
// range, does not start its down_for again. A page of 2,000 views an
// hour at noon falls to 38 % for a day, about where its level lies:
// heard at 10:00 (11:00 when a drop asked the whole sensitivity, 12:00
// on its hours alone; without lingering, never), and resolved as the
// hour's in the morning (TestUnusualHolidayDropFiresAndResolves).
func TestUnusualDropAtTheEdgeOfItsLevelLasts(t *testing.T) {
	r := unusualRule(t, Unusual{})
	s := newSynth(monday, 28, 5, holiday(2000, 0.38))
	got := s.run(t, r, monday.Add(7*24*time.Hour))
	want := []string{"fire down 03-26 Thu 10:00", "resolve down 03-27 Fri 08:00"}
	wantMessages(t, got, want)
}

// A storm: 4 days at 30 % of normal is one drop, not one a day. Each
// night's normal is too small to tell a page gone quiet from one back;
// resolving there, as the rule once did, and firing again after the
// next morning's down_for told the same drop four times.
func TestUnusualDropOfDaysIsOneEpisode(t *testing.T) {
	r := unusualRule(t, Unusual{})
	storm := monday.Add(35*24*time.Hour + 10*time.Hour) // Monday of the 6th week, 10:00
	s := newSynth(monday, 42, 13, func(t time.Time) float64 {
		v := daily(5000)(t)
		if !t.Before(storm) && t.Before(storm.Add(4*24*time.Hour)) {
			v *= 0.3
		}
		return v
	})
	got := s.run(t, r, monday.Add(35*24*time.Hour))
	want := []string{"fire down 04-06 Mon 12:50", "resolve down 04-10 Fri 11:40"}
	wantMessages(t, got, want)
}

func TestUnusualLateDataHoldsDrops(t *testing.T) {
	r := unusualRule(t, Unusual{})
	e := Expected{Value: 200, Bottom: 200, Top: 200, Low: 150, High: 250, Dispersion: 0.02, Samples: 4, OK: true}
	var st State
	at := monday
	for i := 0; i < 30; i++ {
		var fire []Firing
		st, fire = r.StepEpisode(st, Observation{At: at, Count: 0, Expected: e, Late: true})
		if len(fire) > 0 || !st.Building.IsZero() {
			t.Fatalf("late data judged as a drop at step %d: %v %+v", i, fire, st)
		}
		at = at.Add(10 * time.Minute)
	}
	// Once the data is on time, the drop builds for down_for, then fires.
	var fired []string
	for i := 0; i <= 13; i++ {
		var fire []Firing
		st, fire = r.StepEpisode(st, Observation{At: at, Count: 0, Expected: e})
		for _, f := range fire {
			fired = append(fired, fmt.Sprintf("%s after %s", f.Event, time.Duration(i)*10*time.Minute))
		}
		at = at.Add(10 * time.Minute)
	}
	if want := []string{"fire after 2h0m0s"}; !slices.Equal(fired, want) {
		t.Errorf("got %v, want %v", fired, want)
	}
}

// A page whose traffic stops for good is told once; the drop resolves
// once its normal has caught up (here at two weeks, when half its
// weekly samples are of nothing), saying it has not come back, and the
// page is heard again when it surges: no page is kept in a drop for
// ever.
func TestUnusualDropToANewSmallNormalEnds(t *testing.T) {
	r := unusualRule(t, Unusual{})
	fall := monday.Add(28*24*time.Hour + 10*time.Hour) // 5th week, Monday 10:00
	surge := monday.Add(63*24*time.Hour + 14*time.Hour)
	s := newSynth(monday, 65, 31, func(t time.Time) float64 {
		switch {
		case !t.Before(surge) && t.Before(surge.Add(2*time.Hour)):
			return 300
		case !t.Before(fall):
			return 0
		}
		return daily(120)(t)
	})
	got := s.run(t, r, monday.Add(28*24*time.Hour))
	want := []string{"fire down 03-30 Mon 12:50", "resolve down 04-13 Mon 12:00 not back", "fire up 05-04 Mon 14:10", "resolve up 05-04 Mon 20:00"}
	wantMessages(t, got, want)
}

// A drop is held while its page's normal is too small to tell (under
// min_count), for 3 days at most: then it is judged as before, and a
// count inside the usual range resolves it.
func TestUnusualDropHeldAtASmallNormalForThreeDaysAtMost(t *testing.T) {
	r := unusualRule(t, Unusual{})
	small := Expected{Value: 12, Bottom: 12, Top: 12, Low: 5, High: 22, Dispersion: 0.04, Samples: 4, Days: 28, Weekly: true, OK: true}
	st := State{Episode: 1, Open: &Episode{Since: monday, Peak: 0, PeakAt: monday, Down: true}}
	var got []string
	for at := monday.Add(time.Hour); at.Before(monday.Add(80 * time.Hour)); at = at.Add(10 * time.Minute) {
		var fire []Firing
		st, fire = r.StepEpisode(st, Observation{At: at, Count: 10, Expected: small})
		for _, f := range fire {
			got = append(got, fmt.Sprintf("%s %s", f.Event, at.Format("01-02 15:04")))
		}
	}
	// Held from 01:00 on the 2nd; judged from 01:00 on the 5th, back
	// then, resolved after settle (1h).
	wantMessages(t, got, []string{"resolve 03-05 02:00"})
}

// A small page's day at a quarter of its normal is heard on its hours
// together (Reach.Long: the window and down_for) at 13:00, and told as
// one drop until its hours are back in their range in the morning
// (its night's range reaches down to the drop, and cannot tell it:
// cannotTellDown; before, back at 2:30). On
// its hour alone it was heard only at its busiest (16:20: 7 views
// against 25 an hour says little) and thought back at 20:10, its
// evening's range reaching down to a quarter. The why says the hours it
// fired on, as a burst's minutes are said: "15 views in 3 hours,
// expected 43–103" (the receivers' wording tests pin that text).
func TestUnusualSmallPageDropHeardOnItsHours(t *testing.T) {
	r := unusualRule(t, Unusual{})
	if got := r.Detector().Reach().Long; got != 3*time.Hour {
		t.Fatalf("reach long %s, want the window and down_for, 3h", got)
	}
	s := newSynth(monday, 28, 7, holiday(30, 0.25))
	got := s.run(t, r, monday.Add(7*24*time.Hour))
	want := []string{"fire down 03-26 Thu 13:00", "resolve down 03-27 Fri 09:00"}
	wantMessages(t, got, want)
	if len(s.against) == 0 {
		return
	}
	a := s.against[0]
	if a.Burst != 3*time.Hour || a.Direction != "down" || a.Short != 15 || a.ShortBaseline <= 0 || float64(a.Short) >= a.ShortLow || a.ShortLow >= a.ShortBaseline {
		t.Errorf("fire measured against %+v: want its 3 hours, their count under their usual range", a)
	}
	t.Logf("fired on %d views in 3h, expected %.0f–%.0f (normal %.0f); the hour: %.0f–%.0f", a.Short, a.ShortLow, a.ShortHigh, a.ShortBaseline, a.Low, a.High)
}

// A flat small page (15 views an hour, never a normal of min_count in
// an hour) at nothing for 6 hours: heard on its hours, and resolved the
// same evening once they are back in their range. Held on its hour's
// normal, which is always too small to tell, it lasted 6 days.
func TestUnusualFlatSmallPageDropEndsWhenItsHoursAreBack(t *testing.T) {
	r := unusualRule(t, Unusual{})
	from := monday.Add(24*24*time.Hour + 10*time.Hour) // the 4th Thursday, 10:00
	s := newSynth(monday, 28, 11, func(t time.Time) float64 {
		if !t.Before(from) && t.Before(from.Add(6*time.Hour)) {
			return 0
		}
		return 15
	})
	got := s.run(t, r, monday.Add(7*24*time.Hour))
	want := []string{"fire down 03-26 Thu 14:30", "resolve down 03-26 Thu 19:00"}
	wantMessages(t, got, want)
}

// launch is a new page's views an hour: daily(peak), times the launch
// that brought it readers on its first day (20 × at its start, a factor
// e less every 6 hours).
func launch(peak float64, at time.Time) func(time.Time) float64 {
	return func(t time.Time) float64 {
		return daily(peak)(t) * (1 + 20*math.Exp(-t.Sub(at).Hours()/6))
	}
}

// A new post read 20 × on its first day settles over its next days: no
// message, though its second day's afternoon is a tenth of its first's
// (judged against that day alone at sensitivity, as before dropLevel asked twice the evidence, it fired
// "fire down 03-03 Tue 13:00").
func TestUnusualLaunchSettlingIsNoDrop(t *testing.T) {
	r := unusualRule(t, Unusual{})
	at := monday.Add(10 * time.Hour)
	s := newSynth(at, 10, 41, launch(200, at))
	wantMessages(t, s.run(t, r, at.Add(24*time.Hour)), nil)
}

// A new page gone to nothing on its second day (a broken deploy) is
// still a drop, after down_for (at 14:00 at the earliest): twice the
// evidence is a count near 0. (A page of 40 views at noon is not heard
// on its second day, only from its third: see dropLevel.)
func TestUnusualNewPageGoneToNothing(t *testing.T) {
	r := unusualRule(t, Unusual{})
	at := monday.Add(10 * time.Hour)
	broken := at.Add(26 * time.Hour) // Tuesday 12:00
	s := newSynth(at, 3, 43, func(t time.Time) float64 {
		if !t.Before(broken) {
			return 0
		}
		return launch(200, at)(t)
	})
	got := s.run(t, r, at.Add(24*time.Hour))
	if len(got) == 0 || !strings.HasPrefix(got[0], "fire down 03-03 Tue 1") || got[0] < "fire down 03-03 Tue 14:00" {
		t.Fatalf("a new page gone to nothing on its 2nd day: got %v, want a drop that afternoon", got)
	}
}

// A page whose weekends are quiet is not told gone quiet on its first
// weekend, when its normal is 5 weekdays (as every page of a B2B site is
// in the week after pagewatch is installed): until the normal knows the
// week a drop needs twice the evidence. With a drop judged at 5 units
// from the start it fired "fire down 03-07 Sat 10:00" (page of 1,200
// views at its busiest, weekends at 30 %); a page gone to nothing in its
// first week is still heard (TestUnusualNewPageGoneToNothing).
func TestUnusualFirstQuietWeekendIsNoDrop(t *testing.T) {
	r := unusualRule(t, Unusual{})
	s := newSynth(monday, 14, 47, func(t time.Time) float64 {
		v := daily(1200)(t)
		if wd := t.Weekday(); wd == time.Saturday || wd == time.Sunday {
			v *= 0.3
		}
		return v
	})
	wantMessages(t, s.run(t, r, monday.Add(24*time.Hour)), nil)
}

// A page gone for good in its second week (renamed, deleted) is told
// once, and its resolve says it has not come back. Its normal follows
// it down from its past days within 3 days; from its fourth week the
// normal is read from past weeks, most of them before it stopped, and
// without the memory of where its last drop settled it was told gone
// quiet again then ("fire down 03-23 Mon 08:00", resolved at 03-29):
// two drops and two "back to normal"s for one page gone.
func TestUnusualPageGoneForGoodIsToldOnce(t *testing.T) {
	for _, peak := range []float64{60, 2000} {
		r := unusualRule(t, Unusual{})
		gone := monday.Add(10*24*time.Hour + 12*time.Hour) // Thursday of its 2nd week
		s := newSynth(monday, 42, 53, func(t time.Time) float64 {
			if !t.Before(gone) {
				return 0
			}
			return daily(peak)(t)
		})
		got := s.run(t, r, monday.Add(24*time.Hour))
		if len(got) != 2 || !strings.HasPrefix(got[0], "fire down 03-12 Thu") || !strings.HasPrefix(got[1], "resolve down 03-15 Sun") || !strings.HasSuffix(got[1], " not back") {
			t.Errorf("a page of %g views at its busiest gone for good on its 11th day: got %q, want one drop that afternoon and one resolve, not back", peak, got)
		}
	}
}

// A page that falls to a third for good is told once, and not back 10
// days on, when it has held that level 10 days running: a lower level,
// judged at from now (unusual_level.go; before, not back when its normal
// had followed it, two weeks on); a holiday's page that comes back is
// back.
func TestUnusualDropResolvesBackOrNot(t *testing.T) {
	r := unusualRule(t, Unusual{})
	fall := monday.Add(30*24*time.Hour + 12*time.Hour)
	s := newSynth(monday, 56, 59, func(t time.Time) float64 {
		if !t.Before(fall) {
			return daily(2000)(t) / 3
		}
		return daily(2000)(t)
	})
	got := s.run(t, r, monday.Add(28*24*time.Hour))
	want := []string{"fire down 04-01 Wed 15:00", "resolve down 04-11 Sat 15:00 not back"}
	wantMessages(t, got, want)

	h := newSynth(monday, 35, 61, holiday(2000, 0.25))
	got = h.run(t, r, monday.Add(21*24*time.Hour))
	if len(got) != 2 || got[1] != "resolve down 03-27 Fri 08:00" {
		t.Errorf("a holiday's page back the next day: got %q, want a drop and its resolve, back", got)
	}
}

// unevenDays is rate with each day's views times a lognormal factor of
// spread (its median 1), drawn from seed and the day: days that vary as
// a real site's do, beyond counting's noise.
func unevenDays(seed uint64, spread float64, rate func(time.Time) float64) func(time.Time) float64 {
	return func(t time.Time) float64 {
		rng := rand.New(rand.NewPCG(seed, uint64(t.Unix()/86400)))
		return rate(t) * math.Exp(spread*rng.NormFloat64())
	}
}

// A holiday at 45 % on a page of 2,000 views an hour whose days vary
// by 15 % (lognormal), on 8 draws: its 3 samples of each hour put 5
// noise units down near its level, so a drop asked the whole
// sensitivity was heard on 5 of them, hours late; asked 0.9 × it (a
// drop must last down_for as well) on 7, and the other 27 days of each
// fire nothing. The 8th draw's holiday lies inside what its days do.
func TestUnusualHolidayOnUnevenDaysIsHeard(t *testing.T) {
	r := unusualRule(t, Unusual{})
	want := []string{
		"fire down 03-26 Thu 11:00|resolve down 03-27 Fri 08:00",
		"fire down 03-26 Thu 10:00|resolve down 03-27 Fri 08:00",
		"fire down 03-26 Thu 10:00|resolve down 03-27 Fri 08:00", // 03:10 before a night that cannot tell held it
		"fire down 03-26 Thu 14:00|resolve down 03-27 Fri 10:10",
		"fire down 03-26 Thu 10:00|resolve down 03-27 Fri 08:00",
		"fire down 03-26 Thu 12:00|resolve down 03-27 Fri 08:00",
		"fire down 03-26 Thu 16:00|resolve down 03-27 Fri 08:00",
		"",
	}
	for i, w := range want {
		seed := uint64(i + 1)
		s := newSynth(monday, 28, seed, unevenDays(seed, 0.15, holiday(2000, 0.45)))
		if got := strings.Join(s.run(t, r, monday.Add(7*24*time.Hour)), "|"); got != w {
			t.Errorf("draw %d: %q, want %q", seed, got, w)
		}
	}
}

// A hold (Episode.SmallSince, at hours whose normal cannot tell a drop
// from back) lasts 3 days at most, and begins again only when the page
// is seen past its range at hours that can tell for settle at a stretch
// (Episode.Past). Before, any look at such an hour began it again: a
// noisy page a little past its range at the odd hour held a surge open
// 17.7 days. And a look back before a held look does not count towards
// settle: back must be seen settle long at a stretch.
func TestUnusualHoldBeginsAgainOnlyPastItsRangeForSettle(t *testing.T) {
	r := unusualRule(t, Unusual{})
	small := Expected{Value: 12, Bottom: 12, Top: 12, Low: 5, High: 22, Dispersion: 0.04, Samples: 4, Days: 28, Weekly: true, OK: true}
	big := Expected{Value: 200, Bottom: 200, Top: 200, Low: 150, High: 250, Dispersion: 0.04, Samples: 4, Days: 28, Weekly: true, OK: true}
	type look struct {
		e     Expected
		count uint64
	}
	held, back, past := look{small, 10}, look{big, 200}, look{big, 10}
	run := func(plan func(h time.Duration) look) string {
		st := State{Episode: 1, Open: &Episode{Since: monday, PeakAt: monday, Down: true}}
		var got []string
		for at := monday.Add(10 * time.Minute); at.Before(monday.Add(8 * 24 * time.Hour)); at = at.Add(10 * time.Minute) {
			l := plan(at.Sub(monday))
			var fire []Firing
			st, fire = r.StepEpisode(st, Observation{At: at, Count: l.count, Expected: l.e})
			for _, f := range fire {
				got = append(got, fmt.Sprintf("%s %s", f.Event, at.Format("01-02 15:04")))
			}
		}
		return strings.Join(got, "|")
	}
	day := func(h time.Duration) time.Duration { return h % (24 * time.Hour) }
	for _, c := range []struct {
		name string
		plan func(h time.Duration) look
		want string
	}{
		{"past 30 minutes each afternoon: held 3 days from its first look, then back", func(h time.Duration) look {
			if d := day(h); d >= 16*time.Hour && d < 16*time.Hour+30*time.Minute {
				return past
			}
			return held
		}, "resolve 03-05 01:10"},
		{"past 90 minutes on its 2nd afternoon: held 3 days from then", func(h time.Duration) look {
			if h >= 40*time.Hour && h < 41*time.Hour+30*time.Minute {
				return past
			}
			return held
		}, "resolve 03-06 18:30"},
		{"back for one look either side of held looks: not back", func(h time.Duration) look {
			switch {
			case h == 20*time.Minute || h == 8*time.Hour:
				return back
			case h > 8*time.Hour && h < 10*time.Hour:
				return past
			}
			return held
		}, "resolve 03-05 11:00"},
	} {
		if got := run(c.plan); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// A page with a burst of 10 × for an hour every day, at an hour of its
// day that moves (8:00 to 17:00), is not down between them: one in 3 of
// its 3-hour samples holds a burst, and their median is often lifted,
// so its ordinary afternoons were 4 noise units under its hours
// together. A drop heard on its hours together asks its hour to be
// under its usual range too: over weeks 2 to 6 of 10 such pages, no
// drop, where weeks 4 to 6 had 15. A page's bursts themselves are its normal
// (unusual_bursts.go), told only past what they reach.
func TestUnusualIrregularBurstsAreNoDrops(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		r := unusualRule(t, Unusual{})
		rng := rand.New(rand.NewPCG(seed, 3))
		var bursts []time.Time
		for d := range 42 {
			bursts = append(bursts, monday.Add(time.Duration(d)*24*time.Hour+time.Duration(8+rng.IntN(10))*time.Hour))
		}
		s := newSynth(monday, 42, seed, func(t time.Time) float64 {
			if within(t, bursts, time.Hour) {
				return 10 * daily(60)(t)
			}
			return daily(60)(t)
		})
		for _, m := range s.run(t, r, monday.Add(7*24*time.Hour)) {
			if strings.HasPrefix(m, "fire down") {
				t.Errorf("page %d: %s", seed, m)
			}
		}
	}
}
