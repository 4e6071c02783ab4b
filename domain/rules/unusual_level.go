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

// stepLevel adds o's count over its normal to its open surge's latest
// day, once an hour, and returns the new level once the surge has held
// it two days running (0: not yet). A day's level is the median of its
// hours': a burst of a few hours on top of it moves it little.
func stepLevel(r *Rule, ep *Episode, o Observation) float64 {
	e := o.Expected
	if r.Unusual == nil || ep.Down || !e.OK {
		return 0
	}
	if ep.DayFrom.IsZero() {
		ep.DayFrom = ep.Since
	}
	// An hour with data not all there says nothing of its level, nor
	// does a new page's launch (its normal is its site's launches) or
	// an hour whose normal is under a view.
	tells := !o.Late && !o.LongLate && !o.Launching && e.Value >= 1
	if tells && ep.NHours < len(ep.Hours) && (ep.HourAt.IsZero() || o.At.Sub(ep.HourAt) >= time.Hour) {
		ep.Hours[ep.NHours] = float32(float64(o.Count) / e.Value)
		ep.NHours++
		ep.HourAt = o.At
	}
	if o.At.Sub(ep.DayFrom) < 24*time.Hour {
		return 0
	}
	day := 0.0
	if ep.NHours >= 12 {
		var hours [len(ep.Hours)]float64
		for i, h := range ep.Hours[:ep.NHours] {
			hours[i] = float64(h)
		}
		day = median(hours[:ep.NHours])
	}
	last := ep.LastDay
	ep.DayFrom, ep.Hours, ep.NHours, ep.LastDay = o.At, [len(ep.Hours)]float32{}, 0, day
	if last <= 0 || day < r.Unusual.Factor || day > last*steadyBand || day < last/steadyBand {
		return 0
	}
	if e.WeeksBack < 3 {
		// Before its normal reads past weeks alone (3 weeks of history)
		// it reads past days too, which follow a rise in three days: a
		// level would be read for a day, and where the page went back,
		// its days on both sides of its rise would hide it for weeks.
		// In its first week two days as high may be its first weekend.
		return 0
	}
	return day
}

// raisedNormal is o's normal as the page's new level makes it
// (State.Raised): judged, when it is not o's own (nil: it is), and
// whether it is the level's (atLevel; else its old level's). The level
// scales the normal while its samples, the page's trend or its noise
// are read in part from before the rise (levelScale, levelNoise), and
// is kept until settledMemory. Under its new level's range and inside
// its old one's (nearer the old), the page is judged against its old
// normal, the model's with the level taken out: a page back where it
// was is not a drop from its new level. Back there for rearm.settle at
// a stretch, at hours that can tell, the level ends, in s: told once
// (ended), and kept as a step back to 1 until the rise's weeks leave
// the normal. Under its old range too (an outage, a page gone) it is
// not back, but judged against its old normal; with its data late it
// is held at its new.
func raisedNormal(r *Rule, s *State, o Observation) (e Expected, judged *Expected, atLevel bool, ended *Firing) {
	e, l := o.Expected, s.Raised
	if l == nil {
		return e, nil, false, nil
	}
	if r.Unusual == nil || len(l.Steps) == 0 || o.At.Sub(l.Since()) > settledMemory {
		s.Raised = nil // a rule no longer unusual, or a level long followed
		return e, nil, false, nil
	}
	n, k, straddles, on := levelNormal(r, l, e, o.At)
	if !on {
		if l.Ended && e.OK {
			s.Raised = nil // its weeks all after its return: the page's own normal
		}
		return e, nil, false, nil
	}
	if l.Ended {
		// Back at its old level, its normal still reads the rise's
		// weeks: read down from them, until they leave it.
		return n, &n, false, nil
	}
	// Its old level as the same model reads it (not e: its weeks after
	// the rise and the trend the rise bent lift e above it).
	old := levelNoise(scaleNormal(e, k/l.Ratio()), l, straddles)
	c := float64(o.Count)
	switch {
	case o.Late || o.LongLate:
		// Hits not all there say nothing of where it is.
		s.Raised = backAt(l, time.Time{})
		return n, &n, true, nil
	case c >= n.Low || c > old.High || c*c >= old.Value*n.Value:
		// At its new level, or between the two (a quiet hour of it,
		// which its drop's sustain and depth tell from a drop), or
		// nearer it than the old (a small page's ranges overlap).
		s.Raised = backAt(l, time.Time{})
		return n, &n, true, nil
	case c < old.Low:
		// Under its old range too: a drop from where it was, if any.
		s.Raised = backAt(l, time.Time{})
		return old, &old, false, nil
	}
	// Under its new level's range and inside its old one's: judged
	// against its old normal. Back there for rearm.settle at a stretch,
	// seen at hours whose two ranges do not meet (at a small page's
	// night 2 × its old normal is inside both, and a page at 2.1 × was
	// told back), the level ends: a step back to its old level, read as
	// the rise's steps are until its weeks leave the normal (Ended).
	if old.High >= n.Low {
		return old, &old, false, nil // cannot tell: neither back nor not
	}
	if l.Back.IsZero() {
		l = backAt(l, o.At)
		s.Raised = l
	}
	if o.At.Sub(l.Back) < r.Rearm.Settle {
		return old, &old, false, nil
	}
	end := *l
	end.Steps = append(slices.Clone(l.Steps), LevelStep{Since: l.Back, Ratio: 1, Set: o.At})
	end.Back, end.Ended = time.Time{}, true
	s.Raised = &end
	return old, &old, false, &Firing{Event: EventResolve, Episode: Episode{Since: l.Since()}, Raised: l.Ratio(), RaisedSince: l.Since(),
		LevelEnded: true, levelEpisode: l.Episode}
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

// backAt is l, back at its old level since at (zero: not back).
func backAt(l *Raised, at time.Time) *Raised {
	if l.Back.Equal(at) {
		return l
	}
	b := *l
	b.Back = at
	return &b
}

// raise is the level a surge that held k × its normal for two days
// sets, from since, by the episode that raised it: on top of l when its
// normal was read at l (on), a step whose level is k × l's (both are
// multiples of the normal at the first rise, which the model reads);
// else a first. Its trend and noise are the first rise's, what the
// page's history read before any of them.
func raise(l *Raised, since, set time.Time, k float64, on bool, e Expected, episode uint64) *Raised {
	if l == nil || !on {
		return &Raised{Steps: []LevelStep{{Since: since, Ratio: k, Set: set}}, Trend: e.Trend, Noise: e.Noise, Episode: episode}
	}
	steps := append(slices.Clone(l.Steps), LevelStep{Since: since, Ratio: k * l.Ratio(), Set: set})
	if len(steps) > maxLevelSteps {
		steps = steps[len(steps)-maxLevelSteps:]
	}
	return &Raised{Steps: steps, Trend: l.Trend, Noise: l.Noise, Episode: episode}
}

// maxLevelSteps is how many rises a level remembers: its normal reads
// 12 weeks at most, and a page rising for good more than weekly is a
// trend the normal follows.
const maxLevelSteps = 8

// bentFor is how long after a rise the page's trend and its own noise
// are read in part from days before it: its trend from TrendDays days
// ending 3 days back, its noise from NoiseWeeks weeks ending there too.
const bentFor = (TrendDays + 3) * 24 * time.Hour

// levelScale is what the normal e is multiplied by to read at the page's
// new level l.
//
// Under 3 weeks of history the normal reads past days and past weeks
// together, and its range's top is the days': the level over the one
// its past days were at (their middle, 3½ days back) until half of them
// lie after the latest rise, then 1 (the page's trend, read from 4
// weeks of days, is none yet). No level is set then (stepLevel); a
// state that holds one from a site whose data begins later is read so.
//
// From 3 weeks it is the median of past weeks, each carried forward by
// the page's trend, which a rise bends: once the rise's days are most of
// a week, the weeks before it are carried by up to 20 % a week more, and
// the normal rises without the page, until the trend's days all lie
// after the rise (bent). So the median is modelled: the page at each
// step's level from its rise on (1 before the first, and after a return
// to it), growing all along by its trend at the first rise (a page that
// grew before it rose grows on; flat, if its trend could not be read
// then), its weeks carried by the trend now; over the same weeks as its
// normal read them at the rise. With one week of four after a rise of
// 2.5 × and a trend of 20 % a week bent from none, it is 1.3 (not 2.5,
// the ratio); at two of four about 1 (the mean of a week before and one
// after, both carried). With its weeks all after its last step it is 1:
// see the case below.
//
// straddles: its samples lie at more than one level, so their spread is
// the rise's, not the page's noise (levelNoise).
func levelScale(e Expected, window time.Duration, at time.Time, l *Raised) (k float64, straddles, bent bool) {
	last := l.Steps[len(l.Steps)-1]
	bent = at.Sub(last.Since) < bentFor
	wa, w, da, d := normalParts(e, window, at, last.Since)
	switch {
	case d > 0 && 2*da >= d:
		return 1, false, bent
	case d > 0 || w == 0:
		days := at.Truncate(time.Hour).Add(-84 * time.Hour)
		return last.Ratio / levelAt(l, days, 1), wa > 0 || da > 0, bent
	}
	if wa == w {
		// Its weeks all after its last step: its own normal. The trend
		// may still be bent by the rise, lifting it, but taking that out
		// reads a page that grows as one that does not: a page growing
		// 15 % a week, whose trend its first 3 weeks could not tell, was
		// told taking off again 5 weeks after it rose. Too high a normal
		// hears less; too low tells what is not.
		return 1, false, false
	}
	// Week kb back the page was at its step's level, grown by its trend
	// at the rise since (gr: a page growing before it rose grows on);
	// the normal carries it forward by its trend now (gn).
	gr, gn := math.Log1p(l.Trend), math.Log1p(e.Trend)
	var xs, at0 [MaxUnusualWeeks]float64
	n, levels := min(w, len(xs)), 0
	prev := -1.0
	for i := range n {
		kb := float64(i + 1)
		mid := at.Truncate(time.Hour).Add(-time.Duration(7*(i+1))*24*time.Hour - window/2)
		lv := levelAt(l, mid, 1)
		if lv != prev {
			levels++
			prev = lv
		}
		carry := float64(min(i+1, trendWeeks))
		xs[i] = lv * math.Exp(gn*carry-gr*kb)
		at0[i] = math.Exp(gr*carry - gr*kb) // the same weeks as its normal read them at the rise
	}
	return last.Ratio * median(at0[:n]) / median(xs[:n]), levels > 1, bent
}

// levelAt is the level l held at t, or before (its first rise's later).
func levelAt(l *Raised, t time.Time, before float64) float64 {
	lv := before
	for _, s := range l.Steps {
		if t.After(s.Since) {
			lv = s.Ratio
		}
	}
	return lv
}

// levelNoise is e with the page's noise as it was read at the rise
// (Raised.Noise; else the prior every page starts from) where the rise
// is in what it was read from, and its range read again. Samples on
// both sides of a rise of 2.5 × spread as a page whose hours vary by
// half: straddles, the noise at the rise in place of theirs. The page's
// own noise, read from 4 weeks of its hours, spreads so too until they
// all lie after the rise (bentFor): its share of the normal's φ, the
// prior it was shrunk towards, is the one at the rise. Left as it was,
// a surge of 3 × on a page risen 2.5 × sat under a level of 7 × its new
// normal.
func levelNoise(e Expected, l *Raised, straddles bool) Expected {
	clean := phiPrior
	if l.Noise > 0 {
		clean = max(l.Noise, noiseFloor)
	}
	phi := e.Dispersion
	switch {
	case straddles:
		phi = clean
	case e.Noise > 0:
		n := float64(max(e.Samples, 1))
		own := ((n+noiseWeight)*e.Dispersion - noiseWeight*max(e.Noise, noiseFloor)) / n
		phi = (n*max(0, own) + noiseWeight*clean) / (n + noiseWeight)
	}
	if phi >= e.Dispersion {
		return e // never wider: a median's own spread is robust to one week after the rise
	}
	e.Dispersion = phi
	e.Low = max(0, lowerCountAt(e, e.Bottom, -usualZ))
	r := math.Sqrt(e.Top+0.375) + usualZ*noise(e, e.Top)/2
	e.High = r*r - 0.375
	return e
}

// scaleNormal is e at k × its level: its range scaled with it, which at
// the higher count is a little wider than its noise makes it.
func scaleNormal(e Expected, k float64) Expected {
	e.Value *= k
	e.Bottom *= k
	e.Top *= k
	e.Low *= k
	e.High *= k
	e.Scale *= k
	e.Rise *= k
	e.RiseFrom *= k
	e.Long.Value *= k
	e.Long.Bottom *= k
	e.Long.Low *= k
	e.Long.High *= k
	return e
}
