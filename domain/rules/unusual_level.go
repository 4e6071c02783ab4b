package rules

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// A page that rises for good. A page linked from a home page, or one
// that gained a search ranking, steps up and stays: its surge is told
// once, and its normal, the median of past weeks, follows it only once
// half of them lie after the step, two to three weeks on. Until then
// the episode stayed open, and a surge on top of the new level (the
// page on a news site's front page days after it tripled) was no news:
// 15 × its old normal was under escalate's 4 × the level it fired at,
// measured against its second highest remembered burst, itself the new
// level. So a surge whose views over a day are the same multiple of its
// normal as over the day before, within steadyBand, and past factor, is
// a new level: the episode resolves ("has stayed up", Firing.Raised)
// and the page is judged against its normal × that multiple
// (State.Raised) until its normal has followed it. A surge that fades
// (a launch settling) changes from day to day and is not one.

// steadyBand is how far apart two days' multiples may be and still be
// one level: a page's days vary by 10 to 25 %, a surge settling by more.
const steadyBand = 1.25

// A page that falls for good (a search ranking lost, a link taken off a
// home page) is the same: its drop held at one multiple of its normal
// 10 days running is a lower level (Raised.Ratio under 1), "has stayed
// down", and the page is judged at it. Until then its drop stayed open
// two weeks, until its normal followed it: a surge on top that reached
// its old range was told "back to normal" and then "gone quiet" again,
// and an outage on top of it was not told at all.
//
// A drop is a lower level once it has held one level lowerDays
// running, not two as a rise: the falls that come back vary from day to
// day over their week (a Christmas lull at half with Christmas itself at
// a fifth, read as a level from its deepest days, told its days at half
// as surges), or last a week or so (a web server lost for 8 days was
// "has stayed down" a week in and "taking off" when it was back), while
// a page that lost its ranking sits at one level.
const lowerDays = 10

// minLevel is the lowest level a page falls to: under a fifth of its
// normal it is broken or gone (tracking lost for 10 days at 0.15 was
// "has stayed down ... judged at that level" a week in), not at a level, and its drop stays open
// until it is back or its normal follows it (unusual_moved.go).
const minLevel = 0.2

// stepLevel adds o's count over its normal to its open episode's latest
// day, once an hour, and returns the new level, a multiple of that
// normal, once a surge has held it two days running, a drop a week (0:
// not yet). A day's level is the median of its hours': a burst of a few
// hours on top of it moves it little. On a page at a level (level, a
// multiple of its normal before it), an episode back at its old level
// two days running returns it too, past any floor: it ends the level.
func stepLevel(r *Rule, ep *Episode, o Observation, level float64) float64 {
	if !sampleLevel(r, ep, o) || o.At.Sub(ep.DayFrom) < 24*time.Hour {
		return 0
	}
	day, young := ep.level(), youngAt(o, ep)
	ep.Days = Days{DayFrom: o.At, HourAt: ep.HourAt, LastDay: day}
	lo, hi := min(ep.RunLow, day), max(ep.RunHigh, day)
	switch {
	case day <= 0:
		ep.RunDays, ep.RunLow, ep.RunHigh = 0, 0, 0
	case ep.RunDays == 0 || hi > lo*steadyBand:
		ep.RunDays, ep.RunLow, ep.RunHigh = 1, day, day
	default:
		ep.RunDays, ep.RunLow, ep.RunHigh = ep.RunDays+1, lo, hi
	}
	need, back := 2, backAtOld(day*level, level)
	if ep.Down && !back {
		need = lowerDays
		if ep.RunDays >= 2 && young && day >= minLevel && day <= 1/max(r.Unusual.Factor, steadyBand) {
			ep.Young = day // a young page's fall, as its rise below
		}
	}
	if ep.RunDays < need {
		return 0
	}
	if !back && (ep.Down && (day > 1/max(r.Unusual.Factor, steadyBand) || day < minLevel) || !ep.Down && day < r.Unusual.Factor) {
		return 0
	}
	if o.Expected.WeeksBack < 3 {
		// Before its normal reads past weeks alone (3 weeks of history)
		// it reads past days too, which follow a rise in three days: a
		// level would be read for a day, and where the page went back,
		// its days on both sides of its rise would hide it for weeks.
		// In its first week two days as high may be its first weekend.
		// Past it, the surge's first two days are kept as its level
		// for when its normal has followed it (Episode.Young): once
		// its normal reads past weeks alone, some from before the rise,
		// the page is judged at it. Only its first two: its days read
		// against a normal following it fall towards 1 from the third,
		// and two busy days later in a surge of a page whose days vary
		// are no level.
		if !ep.Down && !back && young {
			ep.Young = day
		}
		return 0
	}
	return day
}

// youngAt reports whether o, on a page past its first week and under 3
// weeks of history, ends the first or second day of its episode ep (the
// day ending began under two days after it fired; a day ends at the
// first sweep a day after it began that is not held, so a drop's days
// held at its nights end late).
func youngAt(o Observation, ep *Episode) bool {
	return o.Expected.Weekly && o.Expected.WeeksBack < 3 && ep.DayFrom.Sub(ep.Since) < 2*24*time.Hour
}

// raisedNormal is o's normal as the page's new level makes it
// (State.Raised): judged, when it is not o's own (nil: it is), whether
// it is the level's (atLevel; else its old level's, or an ended level's,
// read down from the rise's weeks), and the level's end, when o ends
// it; levelTop, when o is judged against its old normal, the top of the
// normal at the level (a surge's size is told against the level it is
// at: Observation.levelTop). The level scales the normal while its
// samples, the page's trend or its noise are read in part from before
// the rise (levelScale, levelNoise), and is kept until settledMemory.
//
// A page at a level is judged at it, but for counts between its two
// levels, nearer its old (a raised page under its new range and inside
// its old, a lowered one over its new and inside its old): those are
// judged against its old normal, where they are no news; and counts
// past its old range too (an outage of a raised page, a surge of a
// lowered one past where it was) are judged against its old normal.
// Between its levels levelBack at a stretch, at hours whose two ranges
// do not meet (an hour that cannot tell neither begins nor breaks it),
// its level ends, told once. Ended on an hour back (rearm.settle), a
// noisy page's level ended on a quiet hour and was set again each week,
// each time "back to its old level" then "taking off". Judged at its
// level until it had held its old level for days, a page fading back
// over weeks never ended it (its model, a step, read its old normal
// far under it), the days after a campaign swallowed its outages, and
// a page whose days vary by 30 % ended it on a quiet weekend.
func raisedNormal(r *Rule, s *State, o Observation) (e Expected, judged *Expected, atLevel bool, ended *Firing, levelTop float64) {
	e, l := o.Expected, s.Raised
	if l == nil {
		return e, nil, false, nil, 0
	}
	if r.Unusual == nil || len(l.Steps) == 0 || o.At.Sub(l.Since()) > settledMemory {
		s.Raised = nil // a rule no longer unusual, or a level long followed
		return e, nil, false, nil, 0
	}
	n, k, straddles, on := levelNormal(r, l, e, o.At)
	if !on {
		if l.Ended && e.OK {
			s.Raised = nil // its weeks all after its return: the page's own normal
		}
		return e, nil, false, nil, 0
	}
	if l.Ended {
		// Back at its old level, its normal still reads the level's
		// weeks: read down from them, until they leave it.
		return n, &n, false, nil, 0
	}
	if f := followLevel(s, l, o, n); !sameRaised(f, l) {
		s.Raised = f
		if f.Ratio() != l.Ratio() {
			if math.Abs(math.Log(f.Ratio())) < math.Log(steadyBand) {
				// Moved back within a quarter of its old level: its end.
				if l.Young {
					// A young page's level is dated from its episode,
					// which may have fired days after the page stepped (a
					// step on a Friday hidden by its quiet weekend): its
					// weekend, a week on, read as two days at its old
					// level. Ended, it was told "back to its old level"
					// and "taking off" again each week; dropped, the page
					// is judged as before young levels.
					s.Raised = nil
					return e, nil, false, nil, 0
				}
				return e, nil, false, endLevel(s, l, f.Steps[len(f.Steps)-1].Since, o.At), 0
			}
			n, k, straddles, _ = levelNormal(r, f, e, o.At)
		}
		l = f
	}
	// Its old level as the same model reads it (not e: its weeks after
	// the rise and the trend the rise bent lift e above it).
	old := levelNoise(scaleNormal(e, k/l.Ratio()), l, straddles)
	c := float64(o.Count)
	// Mirrored for a lower level: "past" its new level is above it,
	// "beyond" its old range under it for a raised page, above it for a
	// lowered one.
	atNew := c >= n.Low || c > old.High || c*c >= old.Value*n.Value
	beyond, apart := c < old.Low, old.High < n.Low
	if l.Ratio() < 1 {
		atNew = c <= n.High || c < old.Low || c*c <= old.Value*n.Value
		beyond, apart = c > old.High, n.High < old.Low
	}
	switch {
	case o.Late || o.LongLate:
		// Hits not all there say nothing of where it is.
		return n, &n, true, nil, 0
	case atNew:
		l = backAt(l, time.Time{})
		if l.Young && !l.Seen && e.WeeksBack >= 3 && apart && c >= n.Low && c <= n.High {
			l = seen(l) // at it where its old level could not be
		}
		s.Raised = l
		return n, &n, true, nil, 0
	case beyond:
		s.Raised = backAt(l, time.Time{})
		return old, &old, false, nil, n.Top
	case !apart:
		return old, &old, false, nil, n.Top // cannot tell: neither back nor not
	}
	if l.Back.IsZero() {
		l = backAt(l, o.At)
		s.Raised = l
	}
	if o.At.Sub(l.Back) < max(r.Rearm.Settle, levelBack) {
		return old, &old, false, nil, n.Top
	}
	switch {
	case l.Young && !l.Seen:
		// A young page's level never seen at it once its normal read
		// past weeks: its episode was an excursion its days' normal
		// followed ("not back"), a campaign of two days or a lull of
		// five, not a level. Dropped silently: ended, its span read as
		// a level's, it told a page back for days "back to its old
		// level", and skewed its normal into false drops for days.
		s.Raised = nil
		return e, nil, false, nil, 0
	case l.Young:
		// Seen at: its hours back may be those between the page's step
		// and its episode (followLevel, above), and end nothing.
		return old, &old, false, nil, n.Top
	}
	return old, &old, false, endLevel(s, l, l.Back, o.At), 0
}

// seen is l, a young page's level (Raised.Young), seen at.
func seen(l *Raised) *Raised {
	c := *l
	c.Seen = true
	return &c
}

// followLevel is l with o's count over its normal at the level (n)
// taken once an hour while no episode is open, and, when two days
// running have held one level apart from it (past moveBand, within
// steadyBand of each other), moved there: a step at that multiple, silently. A
// page fading back from its level over weeks (a launch decaying) is not
// a step; read as one, its model held its normal at the level, its old
// normal far under it, and a month on an outage and a surge were missed
// on 4 of 8 draws. Its level follows it down in steps instead, and ends
// once within steadyBand of its old. Not under 3 weeks of history: its
// normal then reads past days, which follow the page by themselves, and
// its count over them says nothing of where its level went (a page
// fallen to 0.3 read its days catching up as falls further, and its
// level sank to 0.08 in a week).
func followLevel(s *State, l *Raised, o Observation, n Expected) *Raised {
	if o.Late || o.LongLate || n.Value < 1 || o.Expected.WeeksBack < 3 {
		return l
	}
	d := *l
	if d.DayFrom.IsZero() {
		last := l.Steps[len(l.Steps)-1]
		d.DayFrom = cmp.Or(last.Set, last.Since)
	}
	if s.Open != nil {
		// An episode's hours say what it is, not where the level went.
		d.Days = Days{DayFrom: o.At}
		return &d
	}
	d.take(o.At, float64(o.Count)/n.Value)
	if o.At.Sub(d.DayFrom) < 24*time.Hour {
		return &d
	}
	day, prev := d.level(), d.LastDay
	d.Days = Days{DayFrom: o.At, LastDay: day}
	if day <= 0 || prev <= 0 || (day < moveBand && day > 1/moveBand) || day > prev*steadyBand || day < prev/steadyBand {
		return &d
	}
	steps := append(slices.Clone(l.Steps), LevelStep{Since: o.At.Add(-48 * time.Hour), Ratio: l.Ratio() * math.Sqrt(day*prev), Set: o.At})
	if len(steps) > maxLevelSteps {
		steps = steps[len(steps)-maxLevelSteps:]
	}
	d.Steps, d.LastDay = steps, 0
	return &d
}

// moveBand is how far from its level a page's days must sit, two running,
// to move it: past a page's day-to-day noise (days that vary by 25 %
// moved it within a quarter, and were told surges and drops from where
// they moved it).
const moveBand = 1.5

// levelBack is how long a page at a level must be back at its old one,
// at a stretch, for its level to end: a noisy page's quiet hour, or a
// few, is not its return.
const levelBack = 6 * time.Hour

// backAt is l, back at its old level since at (zero: not back).
func backAt(l *Raised, at time.Time) *Raised {
	if l.Back.Equal(at) {
		return l
	}
	b := *l
	b.Back = at
	return &b
}

// AtLevel is the normal e of r's window ending at end as a page at the
// new level l (its state's, State.Raised) was judged against then: e
// itself before l's first step was set, or once l no longer scales it.
// What the console draws behind a page's line.
func AtLevel(r *Rule, l *Raised, e Expected, end time.Time) Expected {
	if r.Unusual == nil || l == nil {
		return e
	}
	then := Raised{Trend: l.Trend, Noise: l.Noise}
	for _, st := range l.Steps {
		if set := cmp.Or(st.Set, st.Since); !end.Before(set) {
			then.Steps = append(then.Steps, st)
		}
	}
	if len(then.Steps) == 0 || end.Sub(then.Since()) > settledMemory {
		return e
	}
	n, _, _, _ := levelNormal(r, &then, e, end)
	return n
}

// levelNormal is e read at the level l at at (levelScale, levelNoise):
// n, scaled k, its samples straddling the rise; on is false, and n is
// e, when l no longer scales it (or e is not known).
func levelNormal(r *Rule, l *Raised, e Expected, at time.Time) (n Expected, k float64, straddles, on bool) {
	if !e.OK {
		return e, 1, false, false
	}
	k, straddles, bent := levelScale(e, r.Window.Rolling, at, l)
	if k == 1 && !bent {
		return e, 1, false, false
	}
	return levelNoise(scaleNormal(e, k), l, straddles), k, straddles, true
}

// sampleLevel adds o's count over its normal to its open episode's
// latest day, once an hour (stepLevel), at an hour held as well as one
// judged: a drop's nights are held (cannotTellDown), and a day of its
// hours judged alone had too few to read. It reports whether o's
// normal is known.
func sampleLevel(r *Rule, ep *Episode, o Observation) bool {
	e := o.Expected
	if r.Unusual == nil || !e.OK {
		return false
	}
	if ep.DayFrom.IsZero() {
		ep.DayFrom = ep.Since
	}
	// An hour with data not all there says nothing of its level, nor
	// does a new page's launch (its normal is its site's launches) or
	// an hour whose normal is under a view.
	tells := !o.Late && !o.LongLate && !o.Launching && e.Value >= 1
	if tells {
		ep.take(o.At, float64(o.Count)/e.Value)
	}
	return true
}

// backAtOld reports whether a page at k × its normal before it rose to
// level (or fell) is back at it: within the cube root of its level of it
// (1.44 × from 3 ×, 1.36 × from 2.5 ×, 0.74 × from 0.4 ×), well nearer it
// than its level. Held two days, as a level is set, it ends the level: a
// page at a level is judged at it until then. Half way (the square
// root), two days at 0.6 of a level of 2.5 × ended it. Within steadyBand,
// what the level's model reads of its old normal, good to a quarter or
// so, told a page back from 2.9 × 2 days late.
func backAtOld(k, level float64) bool {
	return level > 0 && k > 0 && math.Abs(math.Log(k)) < math.Abs(math.Log(level))/3
}

// episodeBreak is how long an episode may be back before one the same
// way again is the same change: a surge of hours on a page that fell
// breaks its drop, and its level read from the later drop alone began
// days late (its model read its weeks at its old level where it had
// fallen, and told it taking off a fortnight on).
const episodeBreak = 24 * time.Hour

// episodeBegan is when an episode told at at began: a window before
// (and down_for before that, for a drop), or with the page's last one
// the same way that came back, if that ended less than episodeBreak
// before.
func episodeBegan(r *Rule, s State, at time.Time, down bool) time.Time {
	began := at.Add(-r.Window.Rolling)
	if down && r.Unusual != nil {
		began = began.Add(-r.Unusual.DownFor)
	}
	if !s.PrevBegan.IsZero() && s.PrevDown == down && at.Sub(s.PrevEnded) < episodeBreak && s.PrevBegan.Before(began) {
		return s.PrevBegan
	}
	return began
}

// endLevel ends the level l, its page back at its old level since back
// (held so two days at set), in s, and returns its firing: a step back to 1, read
// as the others are until its weeks leave the normal (Ended), keyed by
// the episode that set the level.
func endLevel(s *State, l *Raised, back, set time.Time) *Firing {
	end := *l
	end.Steps = append(slices.Clone(l.Steps), LevelStep{Since: back, Ratio: 1, Set: set})
	end.Back, end.Ended = time.Time{}, true
	end.Days = Days{}
	s.Raised = &end
	return &Firing{Event: EventResolve, Episode: Episode{Since: l.Since()}, Raised: l.Ratio(), RaisedSince: l.Since(),
		LevelEnded: true, levelEpisode: l.Episode}
}

// raise is the level a surge (or a drop) that held k × the page's
// normal at its first rise for two days sets, from since, by the episode
// that set it: a step after l's when its normal was read by l's model
// (on; k a multiple of the same normal as l's steps, which the model
// reads); else a first. Its trend and noise are the first rise's, what
// the page's history read before any of them.
func raise(l *Raised, since, set time.Time, k float64, on bool, e Expected, episode uint64) *Raised {
	if l == nil || !on {
		return &Raised{Steps: []LevelStep{{Since: since, Ratio: k, Set: set}}, Trend: e.Trend, Noise: e.Noise, Episode: episode}
	}
	steps := append(slices.Clone(l.Steps), LevelStep{Since: since, Ratio: k, Set: set})
	if len(steps) > maxLevelSteps {
		steps = steps[len(steps)-maxLevelSteps:]
	}
	return &Raised{Steps: steps, Trend: l.Trend, Noise: l.Noise, Episode: episode}
}

// maxLevelSteps is how many rises a level remembers: its normal reads
// 12 weeks at most, and a page rising for good more than weekly is a
// trend the normal follows.
const maxLevelSteps = 8
