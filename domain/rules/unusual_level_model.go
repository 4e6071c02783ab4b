package rules

import (
	"math"
	"time"
)

// How a page's normal reads at its new level (State.Raised): its past
// weeks modelled at the levels the page held then (levelScale), and its
// noise as it was before the rise (levelNoise).

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
