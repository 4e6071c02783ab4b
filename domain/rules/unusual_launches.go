package rules

import (
	"cmp"
	"slices"
	"time"
)

// A site's launches: a new page's normal.
//
// A page new on a site whose data is older has a normal of nothing (its
// past windows had no views), and any launch would be news: "took off
// from nothing". But launching is what a site's new pages do; a blog's
// posts each open with a first hour of a hundred views or so. So a page
// in its launch is judged against its site's launches of the last 4
// weeks, as a page at 0 between bursts is against its bursts: it is told
// when it outgrows all but one of them (by a noise unit), or outlasts
// all but one by a window.

// strayViews is how many views a page may have had in the weeks before
// its launch and still be new: an author's previews of a draft, a link
// tried before it was published, are no history.
const strayViews = 2

// launchDay is how long a page's launch lasts at least: its first day,
// and past it the run of surges begun in it.
const launchDay = 24 * time.Hour

// Launch is one page's launch, among its site's.
type Launch struct {
	// Page names the page as the caller does (the sweeper: its state
	// key), so that a page is not judged against its own launch.
	Page string
	Burst
}

// LaunchOf is the launch a page's state remembers, if any.
func LaunchOf(s State) (Burst, bool) {
	for _, b := range s.Bursts {
		if b.Launch {
			return b, true
		}
	}
	return Burst{}, false
}

// Forgotten reports whether a launch is too old for a judgment at at
// to read (4 weeks).
func (l Launch) Forgotten(at time.Time) bool { return l.At.Before(at.Add(-pastSpan)) }

// Launches are a site's launches under one rule, kept to those a page's
// judgment can read: the highest and the longest few, and which pages
// launched.
type Launches struct {
	top   []Launch
	pages map[string]bool
}

// keptLaunches is how many of the highest, and of the longest, a site's
// launches keep at least: the second of each is read, and a page in its
// launch may be one of them.
const keptLaunches = 3

// launchShare is the share of a site's launches a launch must outgrow
// all but, on a site that launches many: 1 in 20. A news site's tenth
// article of the day is its normal; its largest of the month alone is
// too rare to be all it hears of.
const launchShare = 20

// launchRank is which of m launches a launch must pass: the second
// highest, or the one at 1 in 20 of them.
func launchRank(m int) int {
	return max(2, (m+launchShare-1)/launchShare)
}

// NewLaunches keeps the launches of all that a judgment at at can read:
// those of the 4 weeks before it.
func NewLaunches(all []Launch, at time.Time) Launches {
	since := at.Add(-pastSpan)
	l := Launches{pages: map[string]bool{}}
	var in []Launch
	for _, x := range all {
		if !x.At.Before(since) {
			in = append(in, x)
			l.pages[x.Page] = true
		}
	}
	// A page may be one of those read: one more than the rank.
	keep := max(keptLaunches, launchRank(len(in))+1)
	if len(in) <= 2*keep {
		l.top = in
		return l
	}
	byCount := slices.Clone(in)
	slices.SortStableFunc(byCount, func(a, b Launch) int { return cmp.Compare(b.Count, a.Count) })
	byLength := in
	slices.SortStableFunc(byLength, func(a, b Launch) int { return cmp.Compare(b.lasted(), a.lasted()) })
	l.top = slices.Clone(byCount[:keep])
	for _, x := range byLength[:keep] {
		if !slices.ContainsFunc(l.top, func(t Launch) bool { return t.Page == x.Page }) {
			l.top = append(l.top, x)
		}
	}
	return l
}

// For is what a page (named as Launch.Page) in its launch is judged
// against: the site's launches but its own, and which of them it must
// pass (Observation.LaunchRank).
func (l Launches) For(page string) ([]Burst, int) {
	out := make([]Burst, 0, len(l.top))
	for _, x := range l.top {
		if x.Page != page {
			out = append(out, x.Burst)
		}
	}
	m := len(l.pages)
	if l.pages[page] {
		m--
	}
	return out, launchRank(m)
}

// burstRank is which of a page's bursts (or, in its launch, its site's
// launches) a count must pass to be news.
func burstRank(o Observation) int {
	if o.Launching {
		return max(2, o.LaunchRank)
	}
	return 2
}

// Len is how many launches are kept.
func (l Launches) Len() int { return len(l.top) }

// Expires is when the first of those kept is forgotten: from then a
// judgment reads others (NewLaunches again). Zero: none is kept.
func (l Launches) Expires() time.Time {
	var first time.Time
	for _, x := range l.top {
		if first.IsZero() || x.At.Before(first) {
			first = x.At
		}
	}
	if first.IsZero() {
		return first
	}
	return first.Add(pastSpan)
}

// ReadsLaunches reports whether a rule judges a page in its launch
// against its site's launches: an unusual rule that looks up (or both
// ways), whose sweeps read each page's weeks before its window, and so
// know a page that had no views in them (Observation.Before). One that
// looks only up once read none, judged each new page against its own
// normal of nothing, and told every new post of a blog that reached
// min_count (34 of 34 in TestBacktestNewPagesAreJudgedAgainstTheSitesLaunches,
// 7 now, as looking both ways).
func ReadsLaunches(r *Rule) bool {
	return r.Unusual != nil && r.Unusual.Direction != Down && r.Aggregate != Sum
}

func (b Burst) lasted() time.Duration {
	if b.Lasted == 0 {
		return burstGroup
	}
	return b.Lasted
}

// InLaunch reports whether a page whose state is prev is, at o, in its
// launch, where it reads its site's launches (Observation.Launches):
// one that never is neither reads them nor adds to them.
func InLaunch(r *Rule, prev State, o Observation) bool {
	if !ReadsLaunches(r) {
		return false
	}
	o.Above = aboveFrom(r, prev, o.At)
	in, _ := launching(prev, o)
	return in
}

// aboveFrom is when the run of surges an observation at at would
// continue began (Observation.Above): a run lasts while its sweeps are
// less than a window apart. Zero: none.
func aboveFrom(r *Rule, prev State, at time.Time) time.Time {
	if !prev.AboveTo.IsZero() && at.Sub(prev.AboveTo) < r.Window.Rolling {
		return prev.AboveFrom
	}
	return time.Time{}
}

// launching reports whether a page is in its launch, judged against its
// site's (Observation.Launches): it remembers no burst of its own and
// had no views in the weeks before the window but a stray one or two (a
// new page, or one new again after weeks without any), or the first
// burst it remembers is its launch, those after it came on its first
// day, and this is its first day or a run of surges begun then. first:
// the former, whose burst, if this is one, is the launch. Its normal
// alone cannot say a page is new: one whose views are all by day has
// none at night.
func launching(s State, o Observation) (in, first bool) {
	if !o.Expected.OK {
		return false, false
	}
	// Bursts are kept in time order: its own, of the last 4 weeks, begin
	// at the first not forgotten.
	since := o.At.Add(-pastSpan)
	i := slices.IndexFunc(s.Bursts, func(b Burst) bool { return !b.At.Before(since) })
	if i < 0 {
		return o.BeforeOK && o.Before <= strayViews && s.Open == nil, true
	}
	l := s.Bursts[i]
	if !l.Launch || s.Bursts[len(s.Bursts)-1].At.Sub(l.At) >= launchDay {
		return false, false // no launch, or a burst of its own since its first day
	}
	return o.At.Sub(l.At) < launchDay || (!o.Above.IsZero() && o.Above.Sub(l.At) < launchDay), false
}
