package rules

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

func TestUnusualBurstsAreTheNormalOfAPageAtZero(t *testing.T) {
	r := unusualRule(t, Unusual{})
	// About 100 views in an hour every 2 to 3 days, at varying hours,
	// nothing between; then a burst of 1,000.
	bursts := everyFewDays(17, 40)
	big := bursts[len(bursts)-1]
	s := newSynth(monday, 41, 19, func(t time.Time) float64 {
		for _, b := range bursts {
			if !t.Before(b) && t.Before(b.Add(time.Hour)) {
				if b.Equal(big) {
					return 1000
				}
				return 100
			}
		}
		return 0
	})
	got := s.run(t, r, monday.Add(2*24*time.Hour))
	// The first two bursts fire: nothing says yet that bursts are its
	// normal. From then on only the burst of 1,000 does (1.5 × the
	// second highest of its remembered bursts is the bar).
	want := []string{
		"fire up 03-04 Wed 14:20", "resolve up 03-04 Wed 17:00",
		"fire up 03-07 Sat 06:10", "resolve up 03-07 Sat 09:00",
		"fire up " + big.Add(10*time.Minute).Format("01-02 Mon 15:04"), "resolve up 04-10 Fri 18:00",
	}
	wantMessages(t, got, want)
	if n := len(bursts); n < 14 {
		t.Errorf("only %d bursts of 100 before the big one; the test means a month of them", n)
	}
}

// A page's bursts are its normal in height and in length: a page whose
// cron job brings an hour of 1,000 views every 2 to 3 days, then holds
// at 15 × its normal for 12 hours (far under its bursts' count, far
// longer than any of them), is heard once the surge outlasts its bursts
// by a window, and once only.
func TestUnusualASurgeLongerThanThePageBurstsIsHeard(t *testing.T) {
	r := unusualRule(t, Unusual{})
	bursts := everyFewDays(23, 33)
	surge := monday.Add(34*24*time.Hour + 15*time.Hour) // Sunday of its 5th week, 15:00
	s := newSynth(monday, 36, 29, func(t time.Time) float64 {
		switch {
		case within(t, bursts, time.Hour):
			return 1000
		case within(t, []time.Time{surge}, 12*time.Hour):
			return 150
		}
		return 10
	})
	got := s.run(t, r, monday.Add(2*24*time.Hour))
	// Its first two bursts fire: nothing says yet that they are its
	// normal. The surge, a tenth of a burst's count, is heard 2 h 50 min
	// in: its bursts' runs last 1 h 40 min (judged every 10 minutes: their
	// hour and most of the window's hour after), and it must outlast them
	// by a window.
	want := []string{
		"fire up 03-05 Thu 01:10", "resolve up 03-05 Thu 04:00",
		"fire up 03-08 Sun 02:10", "resolve up 03-08 Sun 05:00",
		"fire up 04-05 Sun 17:50", "resolve up 04-06 Mon 07:00",
	}
	wantMessages(t, got, want)
	// Its why says so: lasted 2 h 40 min (from 15:10), its bursts 1 h 40 min.
	if a := s.against[4]; a.Lasted != 160*time.Minute || a.BurstsLast != 100*time.Minute {
		t.Errorf("the surge's fire: lasted %s against bursts of %s, want 2h40m and 1h40m", a.Lasted, a.BurstsLast)
	}
	if a := s.against[0]; a.Lasted != 0 {
		t.Errorf("a burst heard at its own count says it lasted %s", a.Lasted)
	}
}

// A state kept before bursts' lengths were: its bursts count as lasting
// 6 hours, so no surge outlasts them until they are forgotten.
func TestUnusualBurstsOfAnOlderStateHaveNoLength(t *testing.T) {
	var st State
	if err := json.Unmarshal([]byte(`{"bursts":[{"at":"2026-03-02T09:00:00Z","count":1000},{"at":"2026-03-05T01:00:00Z","count":980}]}`), &st); err != nil {
		t.Fatal(err)
	}
	if got := secondLongest(st.Bursts, monday, monday.Add(7*24*time.Hour)); got != 6*time.Hour {
		t.Errorf("second longest of an older state's bursts: %s, want 6h", got)
	}
	st.Bursts = rememberBurst(st.Bursts, monday.Add(5*24*time.Hour), monday.Add(5*24*time.Hour), 990)
	if got := st.Bursts[len(st.Bursts)-1].Lasted; got != time.Minute {
		t.Errorf("a run seen at one sweep is remembered as lasting %s, want 1m", got)
	}
}

// everyFewDays is a page's bursts: from its first Monday 9:00, one every
// 2 to 3 days at varying hours, for days days, from a fixed seed.
func everyFewDays(seed uint64, days int) []time.Time {
	rng := rand.New(rand.NewPCG(seed, 1))
	var out []time.Time
	for at := monday.Add(9 * time.Hour); at.Before(monday.Add(time.Duration(days) * 24 * time.Hour)); {
		out = append(out, at)
		at = at.Add(time.Duration(48+rng.IntN(24)) * time.Hour).Add(time.Duration(rng.IntN(6)) * time.Hour)
	}
	return out
}

// within reports whether t falls in [s, s+d) for one of starts.
func within(t time.Time, starts []time.Time, d time.Duration) bool {
	for _, s := range starts {
		if !t.Before(s) && t.Before(s.Add(d)) {
			return true
		}
	}
	return false
}

// A surge of 20 hours, heard by outlasting the page's hour-long bursts,
// is one burst however long it lasts, not one per 6 hours: a 12-hour
// surge two weeks later still outlasts the bursts and is heard, where
// the one long run, counted as several, once made it the page's normal.
func TestUnusualTwoLongSurgesAreBothHeard(t *testing.T) {
	r := unusualRule(t, Unusual{})
	bursts := everyFewDays(23, 33)
	long := []time.Time{monday.Add(20*24*time.Hour + 15*time.Hour), monday.Add(34*24*time.Hour + 15*time.Hour)}
	s := newSynth(monday, 36, 29, func(t time.Time) float64 {
		switch {
		case within(t, bursts, time.Hour):
			return 1000
		case within(t, long[:1], 20*time.Hour), within(t, long[1:], 12*time.Hour):
			return 150
		}
		return 10
	})
	got := s.run(t, r, monday.Add(2*24*time.Hour))
	want := []string{
		"fire up 03-05 Thu 01:10", "resolve up 03-05 Thu 04:00",
		"fire up 03-08 Sun 02:10", "resolve up 03-08 Sun 05:00",
		"fire up 03-22 Sun 17:50", "resolve up 03-23 Mon 14:50", // the first long surge
		// (A burst a little past the second highest on 27 March was
		// told before its bursts, 100 × its normal, were judged as
		// their own: burstBound.)
		"fire up 04-05 Sun 18:10", "resolve up 04-06 Mon 08:10", // the second
	}
	wantMessages(t, got, want)
}

// A told surge of 400 views an hour for 2 hours and 240 for 12 is one
// burst: five days later 3 hours at 245 (24 × the normal) is heard. Its
// 12 hours once counted as two bursts of 240, "reached twice".
func TestUnusualALongSurgeIsNotReachedTwiceByItself(t *testing.T) {
	r := unusualRule(t, Unusual{})
	s1 := monday.Add(28*24*time.Hour + 8*time.Hour)
	s2 := monday.Add(33*24*time.Hour + 14*time.Hour)
	s := newSynth(monday, 36, 7, func(t time.Time) float64 {
		switch {
		case within(t, []time.Time{s1}, 2*time.Hour):
			return 400
		case within(t, []time.Time{s1.Add(2 * time.Hour)}, 12*time.Hour):
			return 240
		case within(t, []time.Time{s2}, 3*time.Hour):
			return 245
		}
		return 10
	})
	got := s.run(t, r, monday.Add(7*24*time.Hour))
	want := []string{"fire up 03-30 Mon 08:10", "resolve up 03-31 Tue 02:00", "fire up 04-04 Sat 14:10", "resolve up 04-04 Sat 21:00"}
	wantMessages(t, got, want)
}

// Outlasting the page's bursts lowers the bar a surge must pass only
// for one that would not fire without it, and never inside an episode:
// a surge past the bursts' count, fired at their level, does not jump
// escalation steps hours later when it has outlasted them, nor say it
// was heard by outlasting.
func TestUnusualOutlastingDoesNotEscalate(t *testing.T) {
	r := unusualRule(t, Unusual{})
	r.Escalate = []float64{2, 5, 10}
	var bursts []time.Time
	for d := 7; d < 28; d += 3 {
		bursts = append(bursts, monday.Add(time.Duration(d)*24*time.Hour+9*time.Hour))
	}
	surge := monday.Add(30*24*time.Hour + 14*time.Hour)
	s := newSynth(monday, 32, 3, func(t time.Time) float64 {
		switch {
		case within(t, bursts, time.Hour):
			return 1000
		case within(t, []time.Time{surge}, 5*time.Hour):
			return 1400
		}
		return 10
	})
	got := s.run(t, r, monday.Add(2*24*time.Hour))
	// Its first bursts are told while it has too few of them to know
	// them (a weekday's 9:00 is not yet every third day's), each alike:
	// a burst is measured against the page's other bursts, not its own
	// first sweeps; the surge fires once its hour passes the bursts'
	// count, and is not escalated. (Nor are its first bursts: each is
	// heard on its first 10 minutes at the rate it keeps, 1,000 an hour.
	// They were escalated at 9:20 and 9:40 as their hour filled, until a
	// surge's steps were of the level it fired at: TestUnusualEscalates
	// OnlyOnARise.)
	want := []string{
		"fire up 03-09 Mon 09:10", "resolve up 03-09 Mon 12:00",
		"fire up 03-12 Thu 09:10", "resolve up 03-12 Thu 12:00",
		"fire up 03-18 Wed 10:00", "resolve up 03-18 Wed 12:00",
		// (and 24 March's, a little past the second highest, until its
		// bursts were judged as their own: burstBound)
		"fire up 04-01 Wed 14:50", "resolve up 04-01 Wed 23:00",
	}
	wantMessages(t, got, want)
	for i, a := range s.against {
		if a.Lasted != 0 {
			t.Errorf("message %d (%s) says it was heard by outlasting: %s", i, got[i], a.Lasted)
		}
	}
}

// A rule looking up reads no normal for a page under QuietBelow, as a
// sweep does: such a sweep ends the page's run of surges, so one-minute
// spikes an hour and ten minutes apart are not one run of 5 hours that
// outlasts the page's bursts.
func TestUnusualQuietSweepsEndARun(t *testing.T) {
	r := unusualRule(t, Unusual{Direction: Up})
	bursts := []time.Time{monday.Add(10*24*time.Hour + 9*time.Hour), monday.Add(16*24*time.Hour + 9*time.Hour)}
	day := monday.Add(29*24*time.Hour + 10*time.Hour)
	var spikes []time.Time
	for k := range 5 {
		spikes = append(spikes, day.Add(time.Duration(k)*70*time.Minute))
	}
	s := newSynth(monday, 31, 5, func(t time.Time) float64 {
		switch {
		case within(t, bursts, time.Hour):
			return 1000
		case within(t, spikes, time.Minute):
			return 1800
		}
		return 1
	})
	var st State
	var got []string
	q := r.Detector().QuietBelow()
	end := s.t0.Add(time.Duration(len(s.minutes)) * time.Minute)
	for at := monday.Add(7 * 24 * time.Hour); !at.After(end); at = at.Add(time.Minute) {
		o := Observation{At: at, Count: s.count(at.Add(-r.Window.Rolling), at), Short: s.count(at.Add(-10*time.Minute), at)}
		if o.Count >= q || st.Open != nil {
			spans := r.BaselineSpans(at, s.t0)
			counts := make([]uint64, len(spans))
			for i, sp := range spans {
				counts[i] = s.count(sp.From, sp.To)
			}
			o.Expected = r.Normal(spans, counts, Trend{})
		}
		var fire []Firing
		st, fire = r.StepEpisode(st, o)
		for _, f := range fire {
			got = append(got, fmt.Sprintf("%s %s lasted %s", f.Event, at.Format("01-02 15:04"), f.Lasted))
		}
	}
	// The two bursts fire (nothing known of them yet); the spikes do not.
	want := []string{"fire 03-12 09:02 lasted 0s", "resolve 03-12 12:00 lasted 0s", "fire 03-18 09:01 lasted 0s", "resolve 03-18 12:29 lasted 0s"}
	wantMessages(t, got, want)
}

// A page at nothing between bursts is judged against what its bursts
// reach but 1 in 50: about 1.28 × a run of ten like bursts of 100 (their
// spread counting's own, 10 %), 2.4 × the median of ten that vary by
// half, further with fewer known, but never past 1.5 × the highest
// (from two or three: 175 and 700, thousands of times the launch of two
// unlike ones); nothing from one; sensitivity moves it as it moves every
// other bar.
func TestBurstBound(t *testing.T) {
	at := monday.Add(30 * 24 * time.Hour)
	bursts := func(counts ...uint64) []Burst {
		var out []Burst
		for i, c := range counts {
			out = append(out, Burst{At: at.Add(-time.Duration(len(counts)-i) * 48 * time.Hour), Count: c})
		}
		return out
	}
	like := bursts(100, 104, 96, 100, 101, 99, 100, 97, 103, 100)
	for _, c := range []struct {
		name   string
		bursts []Burst
		scale  float64
		lo, hi float64
		n      int
	}{
		{"ten like bursts", like, 1, 120, 130, 10},
		{"ten at sensitivity 4", like, 0.8, 118, 125, 10},
		{"three like bursts", like[:3], 1, 150, 160, 3},
		{"two", like[:2], 1, 150, 160, 2},
		{"two unlike (a launch, a mention)", bursts(3000, 40), 1, 4400, 4600, 2},
		{"one", like[:1], 1, 0, 0, 0},
		{"varying by half", bursts(300, 150, 600, 300, 200, 450, 300, 250, 400, 300), 1, 680, 760, 10},
	} {
		got, n, _ := burstBound(c.bursts, at.Add(-pastSpan), time.Time{}, c.scale, 1.5)
		if n != c.n || got < c.lo || got > c.hi {
			t.Errorf("%s: bound %.1f of %d bursts, want %g–%g of %d", c.name, got, n, c.lo, c.hi, c.n)
		}
	}
}
