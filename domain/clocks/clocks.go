// Package clocks learns which clocks a site's readers keep from its views
// per hour: UTC, or one of the rules of summer time in use.
//
// A page's normal is the same wall-clock hour on past days and weeks. On
// a site whose readers live in New York, the evening in UTC starts an hour
// earlier from the second Sunday of March, and for the weeks the normal
// reaches back across that change, every evening is an hour early against
// it: rises read as surges and the hour before as a drop. A rule can name
// its zone; a rule with `zone: auto` has each site's clocks learned here
// instead, from what only the right clock explains: the site's day moved
// by an hour in UTC when, and only when, that clock changed.
//
// Only the rule of summer time matters, not the offset: the normal is
// read a whole number of days back, and a day back is 24 hours on every
// clock that does not change. So the candidates are one zone per rule in
// use, and a site on a clock that never changes is on UTC's. (Which day
// is a Saturday does depend on the offset: the unusual rule reads a
// weekday's noise from weekdays in a page's second and third weeks, on
// the learned clock, so a Tokyo site on UTC's has its Saturday's first 9
// hours read as a Friday's; docs/unusual-rules.md, "The normal".)
package clocks

import (
	"math"
	"sort"
	"time"
	_ "time/tzdata" // the candidates load on machines without /usr/share/zoneinfo
)

// A Clock is one rule of summer time, by a zone that keeps it.
type Clock struct {
	Name string         // "America/New_York"
	Loc  *time.Location // nil: UTC
}

// UTC is the clock of a site whose day does not move: no summer time, or
// not learned.
var UTC = Clock{Name: "UTC"}

// Candidates are the rules of summer time in use in 2026, one zone each:
// the US and Canada's, the EU's (and the UK's: the same instants),
// south-east Australia's, New Zealand's, Chile's, Israel's and Egypt's.
// Zones whose rule is the same as one of these are told apart by nothing
// a normal reads.
var Candidates = mustLoad(
	"America/New_York", "Europe/Berlin", "Australia/Sydney",
	"Pacific/Auckland", "America/Santiago", "Asia/Jerusalem", "Africa/Cairo",
)

func mustLoad(names ...string) []Clock {
	out := make([]Clock, 0, len(names))
	for _, n := range names {
		loc, err := time.LoadLocation(n)
		if err != nil {
			panic("clocks: " + err.Error()) // time/tzdata is embedded: cannot happen
		}
		out = append(out, Clock{Name: n, Loc: loc})
	}
	return out
}

// A Change is a candidate clock changing at an instant (a whole UTC hour
// for every candidate).
type Change struct {
	Clock Clock
	At    time.Time
}

// Over reports whether the change's evidence stopped growing by now: its
// week is over, and what it says is final.
func (c Change) Over(now time.Time) bool { return !now.Before(c.At.Add(evidenceFor)) }

// Changes lists the candidates' changes in (from, to], oldest first per
// clock.
func Changes(from, to time.Time) []Change {
	var out []Change
	for _, c := range Candidates {
		t := from
		for {
			_, end := t.In(c.Loc).ZoneBounds()
			if end.IsZero() || end.After(to) {
				break
			}
			out = append(out, Change{Clock: c, At: end.UTC()})
			t = end
		}
	}
	return out
}

// Evidence is what a site's views say about one change: over the hours
// of the week after it, how far each hour's views are from the same hour
// a day and a week before, read on the candidate's clock (Clock) and on
// UTC (UTC), as squared differences of square roots (where a count's
// spread is about the same whatever its size), over Pairs pairs of
// hours. Only the pairs the two clocks read differently count, each
// day's at the day's own level (the median of its hours' ratios, which
// a storm of a few hours does not move), and not an hour that neither
// clock explains (a storm's, a surge's: 2.5 times off both).
type Evidence struct {
	Change     Change
	Clock, UTC float64
	Pairs      int
	// Z is Wilcoxon's signed-rank statistic of the gains, as a normal
	// score: a storm's or a holiday's pairs, far from both, weigh no more
	// than any other.
	Z float64
}

// evidenceFor is how long after a change its evidence is read: a week,
// so that every weekday has been compared with its own.
const evidenceFor = 7 * 24 * time.Hour

// Weigh reads the evidence for ch from views, the site's views in the
// UTC hour beginning at h (ok false when unknown: before the site's data
// or not yet over), with every hour before now known.
func Weigh(views func(h time.Time) (float64, bool), ch Change, now time.Time) Evidence {
	ev := Evidence{Change: ch}
	end := ch.At.Add(evidenceFor)
	if now.Before(end) {
		end = now
	}
	// Each pair's day: a day's level varies (a holiday, a busy Monday),
	// and the pairs of a day are compared at the same level, so that
	// only where its hours fall is weighed.
	type pair struct{ x, onClock, onUTC float64 }
	type dayKey struct {
		day  int64
		back int
	}
	days := map[dayKey][]pair{}
	var order []dayKey
	for h := ch.At; !h.Add(time.Hour).After(end); h = h.Add(time.Hour) {
		x, ok := views(h)
		if !ok {
			continue
		}
		local := h.In(ch.Clock.Loc)
		y, m, d := local.Date()
		for _, k := range []int{1, 7} {
			onClock := time.Date(y, m, d-k, local.Hour(), 0, 0, 0, ch.Clock.Loc).UTC()
			onUTC := h.Add(-time.Duration(k) * 24 * time.Hour)
			if onClock.Equal(onUTC) {
				continue
			}
			a, okA := views(onClock)
			b, okB := views(onUTC)
			if !okA || !okB {
				continue
			}
			key := dayKey{h.Sub(ch.At).Milliseconds() / (24 * time.Hour).Milliseconds(), k}
			if days[key] == nil {
				order = append(order, key)
			}
			days[key] = append(days[key], pair{x, a, b})
		}
	}
	var gains []float64
	for _, key := range order {
		ps := days[key]
		ratios := make([]float64, len(ps))
		for i, p := range ps {
			ratios[i] = (p.x + 1) / ((p.onClock+p.onUTC)/2 + 1)
		}
		sort.Float64s(ratios)
		level := ratios[len(ratios)/2]
		for _, p := range ps {
			if far(p.x, level*p.onClock) && far(p.x, level*p.onUTC) {
				continue // neither clock explains it: a storm's hour, a surge's
			}
			c := sq(math.Sqrt(p.x) - math.Sqrt(level*p.onClock))
			u := sq(math.Sqrt(p.x) - math.Sqrt(level*p.onUTC))
			ev.Clock += c
			ev.UTC += u
			ev.Pairs++
			gains = append(gains, u-c)
		}
	}
	ev.Z = signedRank(gains)
	return ev
}

// far reports whether x is more than farOff times y or less than its
// share, beyond a count's noise (a view added to each).
func far(x, y float64) bool {
	r := (x + 1) / (y + 1)
	return r > farOff || r < 1/farOff
}

// farOff is how far off an hour must be from both clocks' to say
// nothing of either.
const farOff = 2.5

// signedRank is Wilcoxon's signed-rank statistic of xs as a normal score
// (zeros left out, ties given their mean rank).
func signedRank(xs []float64) float64 {
	var abs []float64
	pos := map[int]bool{}
	for _, x := range xs {
		if x != 0 {
			pos[len(abs)] = x > 0
			abs = append(abs, math.Abs(x))
		}
	}
	n := len(abs)
	if n == 0 {
		return 0
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return abs[idx[a]] < abs[idx[b]] })
	w := 0.0
	for i := 0; i < n; {
		j := i
		for j < n && abs[idx[j]] == abs[idx[i]] {
			j++
		}
		rank := float64(i+j+1) / 2 // ranks i+1..j
		for k := i; k < j; k++ {
			if pos[idx[k]] {
				w += rank
			}
		}
		i = j
	}
	fn := float64(n)
	return (w - fn*(fn+1)/4) / math.Sqrt(fn*(fn+1)*(2*fn+1)/24)
}

func sq(x float64) float64 { return x * x }

// Ratio is how much of UTC's misfit the clock leaves, each side with a
// count's own spread added (1/2 a pair): near 1 when the clock explains
// nothing, near 0 when the site's day moved with it.
func (e Evidence) Ratio() float64 {
	noise := 0.5 * float64(e.Pairs)
	return (e.Clock + noise) / (e.UTC + noise)
}

// Thresholds of a verdict: a day of pairs, and the clock nearer than
// UTC pair after pair (Z, one-sided), or nearly so and by far (Ratio).
// On a site whose day did not move with a clock, the clock reads worse
// than UTC (Z below 0); a flat day reads Z near 0. The pairs of
// neighbouring hours are not independent, so the bars are higher than a
// test's usual: on the 372 generated pages and the 10 tweet series,
// weighed on each day of the week after each change, no candidate that
// is not the page's own passed Z 2.8, nor read a Ratio under 0.75 where
// Z passed 1.5. Z alone misses a day that moves in a few sharp steps
// (office hours: two pairs a day differ, 12 of 12 in a week is Z 3.3),
// which Ratio sees at 0.02.
const (
	minPairs = 24
	minZ     = 4
	nearZ    = 3
	maxRatio = 0.5
)

// Convinces reports whether the evidence names its clock.
func (e Evidence) Convinces() bool {
	return e.Pairs >= minPairs && (e.Z >= minZ || (e.Z >= nearZ && e.Ratio() <= maxRatio))
}

// Verdict is the clock a site's readers keep, and the evidence it was
// learned from (none for UTC).
type Verdict struct {
	Clock    Clock
	Evidence Evidence
}

// Learned is UTC's verdict unless some evidence convinces; otherwise the
// candidate listed first among those that convince, unless a later one
// convinces by clearly more (tieMargin). Candidates whose changes fall
// hours apart read alike: the EU's and Israel's in October, Sydney's and
// Auckland's in April; the one more sites keep is listed first.
func Learned(evs []Evidence) Verdict {
	rank := func(c Clock) int {
		for i, k := range Candidates {
			if k.Name == c.Name {
				return i
			}
		}
		return len(Candidates)
	}
	v := Verdict{Clock: UTC}
	for _, e := range evs {
		if !e.Convinces() {
			continue
		}
		switch {
		case v.Clock == UTC,
			e.Z > v.Evidence.Z+tieMargin,
			e.Z >= v.Evidence.Z-tieMargin && rank(e.Change.Clock) < rank(v.Clock):
			v = Verdict{Clock: e.Change.Clock, Evidence: e}
		}
	}
	return v
}

// tieMargin is how much more a candidate listed later must convince by
// to be preferred.
const tieMargin = 1.0

// Learn is the verdict as of now from the changes within reach before it
// (how far back the normals read; a change further back moves none of
// them), each weighed on views. final, when not nil, keeps the evidence
// of each change whose week is over, which is not weighed again.
func Learn(views func(h time.Time) (float64, bool), now time.Time, reach time.Duration, final map[Change]Evidence) Verdict {
	var evs []Evidence
	for _, ch := range Changes(now.Add(-reach), now) {
		ev, ok := final[ch]
		if !ok {
			ev = Weigh(views, ch, now)
			if final != nil && ch.Over(now) {
				final[ch] = ev
			}
		}
		evs = append(evs, ev)
	}
	return Learned(evs)
}
