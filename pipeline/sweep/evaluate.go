package sweep

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/pipeline/sweep/pagestate"
)

// Counter is what a sweep reads from ClickHouse: per-minute counts,
// summed per page over windows, never raw hits.
type Counter interface {
	WindowCounts(ctx context.Context, q traffic.WindowQuery) ([]traffic.PageCount, error)
	SealDays(ctx context.Context, before time.Time) (int, error)
	SealHours(ctx context.Context, before time.Time) (int, error)
	ScanMinutes(ctx context.Context, q traffic.MinuteScan, fn func(site, path string, minute time.Time, hits uint64) error) error
	// For the baselines of spike and new_page rules (baseline.go).
	HourCounts(ctx context.Context, q traffic.HourQuery, fn func(site, path string, hour time.Time, hits uint64)) error
	// For the baselines of rules counting visitors, which are distinct
	// over each span and cannot be summed from hours.
	SpanVisitors(ctx context.Context, q traffic.SpanQuery, fn func(site, path string, span int, visitors uint64)) error
	// For each page's own noise, read once a day with its trend
	// (trends.go).
	PageNoises(ctx context.Context, q traffic.NoiseQuery) ([]traffic.PageNoise, error)
	DataStarts(ctx context.Context) (map[string]time.Time, error)
	// For holding drops while a site's data is late (freshness.go): its
	// newest minute, and how often its minutes have hits at each hour.
	DataEnds(ctx context.Context, since, until time.Time) (map[string]time.Time, error)
	SiteHours(ctx context.Context, from, to time.Time) ([]traffic.SiteHour, error)
}

// ruleSet is the rules in force, with what a sweep derives from them once:
// the sites to read, and which rules match which page (a page's matches
// do not change until the rules do, and globs and regexes over 100k pages
// are worth remembering).
type ruleSet struct {
	rules []*rules.Rule
	// Exact-path rules are found by a map lookup; the others (prefix,
	// glob, regex) are tried one by one, once per page.
	exact  map[page][]int
	bySite map[string][]int
	sites  []string
	// floor: a page whose every count is at most this cannot fire nor
	// stay disarmed, so ClickHouse need not return it.
	floor uint64
	// episodic: some rule is a spike or new_page rule, whose normals
	// judge reads (baseline.go).
	episodic bool

	// settleClass numbers each rule's Detector.SettleKey (-1: never
	// settled), so the rules that settle a page's count alike are asked
	// once per page (settleMemo).
	settleClass []int

	// sumKey is each sum rule's one state key ("" for per-page rules).
	sumKey []string

	matchCache
}

type page struct{ site, path string }

func newRuleSet(rs []rules.Rule) *ruleSet {
	set := &ruleSet{exact: map[page][]int{}, bySite: map[string][]int{}, matchCache: newMatchCache()}
	floor := ^uint64(0)
	everySite := false
	classes := map[string]int{}
	for i := range rs {
		r := &rs[i]
		set.rules = append(set.rules, r)
		class := -1
		if k := r.Detector().SettleKey(); k != "" {
			c, ok := classes[k]
			if !ok {
				c = len(classes)
				classes[k] = c
			}
			class = c
		}
		set.settleClass = append(set.settleClass, class)
		sumKey := ""
		if r.Aggregate == rules.Sum {
			sumKey = stateKey(r, "", "")
		}
		set.sumKey = append(set.sumKey, sumKey)
		if r.Site == "" {
			everySite = true
		} else if !slices.Contains(set.sites, r.Site) {
			set.sites = append(set.sites, r.Site)
		}
		switch {
		case r.Match.Exact != "" && r.Site != "":
			p := page{r.Site, r.Match.Exact}
			set.exact[p] = append(set.exact[p], i)
		default:
			// A rule over every site is keyed by the empty site.
			set.bySite[r.Site] = append(set.bySite[r.Site], i)
		}
		if r.HasNormal() {
			set.episodic = true
		}
		if r.Aggregate == rules.Sum {
			floor = 0 // a sum needs every page's share, however small
		} else if q := quietBelow(r); q == 0 {
			floor = 0
		} else {
			floor = min(floor, q-1)
		}
	}
	if len(rs) == 0 {
		floor = 0
	}
	if everySite {
		set.sites = nil // every site: queries do not filter by site
	}
	slices.Sort(set.sites)
	set.floor = floor
	return set
}

// measureOf is what a rule's counts count.
func measureOf(r *rules.Rule) traffic.Measure {
	if r.Count == rules.CountVisitors {
		return traffic.Visitors
	}
	return traffic.Views
}

// siteOf is the site a query for a rule reads: "" for every site.
func siteOf(r *rules.Rule) string { return r.Site }

// quiet reports whether a page's count for a per-page rule is too low to
// matter: below quietBelow, it neither fires nor keeps a fired threshold
// from re-arming (nor an episode from ending), which is exactly what a
// count of 0 does, and judge steps states without an observation with 0.
func quiet(r *rules.Rule, n uint64) bool {
	return n < quietBelow(r)
}

// quietBelow is the count below which a page is, for the rule, the same
// as a page without views (Detector.QuietBelow).
func quietBelow(r *rules.Rule) uint64 { return r.Detector().QuietBelow() }

// stateKey names a rule's state for one page, or for the rule when it
// sums its pages. Crossing keys start with it.
func stateKey(r *rules.Rule, site, path string) string {
	return pagestate.Key(r.Name, site, path, r.Aggregate == rules.Sum)
}

// point is one rule evaluated at one time: the window it counts over and
// when Step is told it is.
type point struct {
	rule     int
	at       time.Time
	from, to time.Time // [from, to): minutes starting in it count; from zero: all time
}

// evalTime is when a rule is judged at sweep time now: calendar windows
// lag_tolerance late, so hits that arrive late still count in the window
// they belong to.
func (s *Sweeper) evalTime(r *rules.Rule, now time.Time) time.Time {
	if r.Window.Kind == rules.Calendar {
		return now.Add(-s.cfg.LagTolerance)
	}
	return now
}

// pointAt is the rule's window at time at; now bounds what exists.
func pointAt(i int, r *rules.Rule, at, now time.Time) point {
	from, to := r.Window.Bounds(at)
	// Rolling and all-time windows end with the minute holding at; the
	// query takes minutes < to.
	if r.Window.Kind != rules.Calendar {
		to = at.Truncate(time.Minute).Add(time.Minute)
	}
	if to.After(now) {
		to = now.Truncate(time.Minute).Add(time.Minute)
	}
	if r.Window.Kind == rules.AllTime {
		from = time.Time{}
	}
	return point{rule: i, at: at, from: from, to: to}
}

// observation is what a sweep learned for one state key at one point.
type observation struct {
	key        string
	pt         point
	site, path string // for a sum rule, path is empty
	count      uint64
	pages      []rules.PageCount // a sum rule's shares
	exp        rules.Expected    // spike and new_page rules: the page's normal
	short      uint64            // the count over the detector's burst window (Reach.Short)
	long       uint64            // the count over its drop's hours (Reach.Long)
	late       bool              // the site's data is behind: no drop is judged
	clock      string            // the site's learned clocks its normal was read on ("": UTC's)
	longLate   bool              // ... or was, at some time in the drop's hours
	// launches are the launches of the page's site under the rule
	// (rules.ReadsLaunches), for a page in its launch; before, when
	// beforeOK, the page's views over the weeks before its window
	// (quietReach), which say whether it is new.
	launches rules.Launches
	before   uint64
	beforeOK bool
	// alike are the rules (indexes) that settle this page as this one's
	// rule does (Detector.SettleKey), its normal not yet known when
	// counted: they are judged only if it is not settled (weighStateless,
	// standIns).
	alike []int
}

// ruleObservation is what the rule's detector is shown of o.
func (o observation) ruleObservation() rules.Observation {
	return rules.Observation{At: o.pt.at, End: o.pt.to, Count: o.count, Expected: o.exp, Short: o.short, Long: o.long, Late: o.late, LongLate: o.late || o.longLate,
		Launches: o.launches, Page: o.key, Before: o.before, BeforeOK: o.beforeOK, Clock: o.clock}
}

// count runs the queries for a set of points and turns the rows into
// observations, grouped by state key in time order. Points with the same
// end share a query. A sweep leaves out what cannot matter to it: pages
// at or below set.floor, and per-page counts too low to fire or hold a
// rule disarmed (quiet). every keeps every page's count, for a backtest's
// starting counts, which later minutes add to.
func (s *Sweeper) count(ctx context.Context, set *ruleSet, pts []point, every bool) (map[string][]observation, int, error) {
	floor := set.floor
	if every {
		floor = 0
	}
	// Points with the same end and measure share a query: views and
	// visitors are read from different tables.
	type endOf struct {
		to time.Time
		m  traffic.Measure
	}
	byEnd := map[endOf][]point{}
	var ends []endOf
	for _, p := range pts {
		k := endOf{p.to, measureOf(set.rules[p.rule])}
		if _, ok := byEnd[k]; !ok {
			ends = append(ends, k)
		}
		byEnd[k] = append(byEnd[k], p)
	}
	slices.SortFunc(ends, func(a, b endOf) int {
		if c := a.to.Compare(b.to); c != 0 {
			return c
		}
		return int(a.m) - int(b.m)
	})
	obs := map[string][]observation{}
	rows := 0
	// The pages with a state under some rule: a page with none (most of
	// them) is settled or not per kind of rule, not per rule and page.
	stated, ready := s.state.pages()
	for _, ek := range ends {
		end := ek.to
		group := byEnd[ek]
		var starts []time.Time
		// startIdx is t's index into starts, added if new.
		startIdx := func(t time.Time) int {
			j := slices.IndexFunc(starts, t.Equal)
			if j < 0 {
				j = len(starts)
				starts = append(starts, t)
			}
			return j
		}
		idx := make([]int, len(group)) // point → index into starts
		sites := map[string]bool{}
		for i, p := range group {
			idx[i] = startIdx(p.from)
			sites[siteOf(set.rules[p.rule])] = true
		}
		// The weeks before each point, for a rule looking down: only to
		// widen the pages returned, and for a rule judging launches, the
		// views a page had in them (observation.before).
		reachIdx := make([]int, len(group))
		for i, p := range group {
			reachIdx[i] = -1
			if from, ok := quietReach(set.rules[p.rule], p); ok {
				reachIdx[i] = startIdx(from)
			}
		}
		// Each point's burst window and drop's hours, by index into
		// starts (-1: none).
		shortIdx, longIdx := make([]int, len(group)), make([]int, len(group))
		for i, p := range group {
			shortIdx[i], longIdx[i] = -1, -1
			if from, ok := shortStart(set.rules[p.rule], p); ok {
				shortIdx[i] = startIdx(from)
			}
			if from, ok := longStart(set.rules[p.rule], p); ok {
				longIdx[i] = startIdx(from)
			}
		}
		q := traffic.WindowQuery{Measure: ek.m, Starts: starts, End: end, SealedBefore: s.seals.daysBefore(), Floor: floor}
		for site := range sites {
			q.Sites = append(q.Sites, site)
		}
		if sites[""] {
			q.Sites = nil // a rule over every site
		}
		slices.Sort(q.Sites)
		counts, err := s.counts.WindowCounts(ctx, q)
		if err != nil {
			return nil, rows, fmt.Errorf("count %d window(s) ending %s: %w", len(starts), end.Format(time.RFC3339), err)
		}
		rows += len(counts)
		ofRule := map[int][]int{} // rule → its points in group
		for gi, p := range group {
			ofRule[p.rule] = append(ofRule[p.rule], gi)
		}
		sums := map[int]*observation{}
		var memo settleMemo
		for _, pc := range counts {
			memo = memo[:0] // a page's verdicts
			pm := set.matching(pc.Site, pc.Path)
			stateless := !every && ready && !stated[pm.page]
			for _, ri := range pm.rules {
				for _, gi := range ofRule[ri] {
					p := group[gi]
					r := set.rules[ri]
					n := pc.Counts[idx[gi]]
					if r.Aggregate == rules.Sum {
						o := sums[gi]
						if o == nil {
							o = &observation{key: stateKey(r, "", ""), pt: p, site: r.Site}
							sums[gi] = o
						}
						o.count += n
						if n > 0 {
							o.pages = append(o.pages, rules.PageCount{Path: pc.Path, Count: n})
							if len(o.pages) >= 4*maxSumPages {
								o.pages = topPages(o.pages) // templates show the busiest only
							}
						}
						continue
					}
					if !every && quiet(r, n) {
						continue
					}
					o := observation{pt: p, site: pc.Site, path: pc.Path, count: n}
					if j := shortIdx[gi]; j >= 0 {
						o.short = pc.Counts[j]
					}
					if j := longIdx[gi]; j >= 0 {
						o.long = pc.Counts[j]
					}
					if j := reachIdx[gi]; j >= 0 && rules.ReadsLaunches(r) {
						o.before, o.beforeOK = pc.Counts[j]-min(n, pc.Counts[j]), true
					}
					// The state key is made only for what is kept: most
					// pages of a rule looking down are settled.
					if stateless && s.weighStateless(set, r, o, pm, &memo, obs) {
						continue
					}
					o.key = set.key(ri, pm)
					obs[o.key] = append(obs[o.key], o)
				}
			}
		}
		for gi, p := range group {
			r := set.rules[p.rule]
			if r.Aggregate != rules.Sum {
				continue
			}
			o := sums[gi]
			if o == nil { // no page had a hit: the sum is still observed, as 0
				o = &observation{key: stateKey(r, "", ""), pt: p, site: r.Site}
			}
			o.pages = topPages(o.pages)
			obs[o.key] = append(obs[o.key], *o)
		}
	}
	for k := range obs {
		slices.SortStableFunc(obs[k], func(a, b observation) int { return a.pt.at.Compare(b.pt.at) })
	}
	return obs, rows, nil
}

// quietReach is, for a rule that looks down or judges launches
// (rules.ReadsLaunches: a page's views in these weeks say it is new),
// the start of a window reaching back over the rule's baseline period:
// counted with the rule's own, it makes the query return the pages that
// had views there, which a page whose views fell to zero in the window
// no longer has in it. Such a
// page is then observed with a count of 0 and judged against its normal:
// "went quiet" is most worth hearing when a page stops entirely. A normal
// big enough to fall needs views in the baseline period, so no page that
// can fire is left out; pages silent over all of it are (an episode open
// that long included).
//
// The reach starts at the UTC midnight before the period: a window
// starting mid-day reads that day's minutes from page_minutes, and the
// coarse minute range of the query then spans the whole period, four
// weeks of minutes scanned every sweep for pages page_days already
// names (BenchmarkSweepUnusual: 2.2 s of a 2.9 s steady sweep counting,
// against 1.3 s without the reach). A few more pages are returned, whose
// normals are read once and are too small to fall.
func quietReach(r *rules.Rule, p point) (time.Time, bool) {
	if !r.Detector().LooksDown() && !rules.ReadsLaunches(r) {
		return time.Time{}, false
	}
	return reachOf(r.BaselineSpans(p.to, time.Time{}), p.from)
}

// reachOf is quietReach's start from the rule's spans (all of them, none
// left out for a site's data start) for a window starting at from.
func reachOf(spans []rules.Interval, from time.Time) (time.Time, bool) {
	var first time.Time
	for _, sp := range spans {
		if first.IsZero() || sp.From.Before(first) {
			first = sp.From
		}
	}
	first = first.UTC().Truncate(24 * time.Hour)
	return first, !first.IsZero() && first.Before(from)
}

// shortStart is the start of the burst window a rule's detector reads
// with its own (Reach.Short), ending with it; false when it reads none.
func shortStart(r *rules.Rule, p point) (time.Time, bool) {
	short := r.Detector().Reach().Short
	return p.to.Add(-short), short > 0 && r.Window.Kind == rules.Rolling
}

// longStart is the start of the drop's hours a rule's detector reads
// with its own window (Reach.Long), ending with it; false when it reads
// none. A rule that looks down reads days back already (quietReach):
// this is one more sum over minutes the query scans anyway.
func longStart(r *rules.Rule, p point) (time.Time, bool) {
	long := r.Detector().Reach().Long
	return p.to.Add(-long), long > 0 && r.Window.Kind == rules.Rolling
}

// maxSumPages is how many of a sum rule's pages its crossing carries,
// for templates: the busiest.
const maxSumPages = 20

// topPages returns the maxSumPages busiest pages, busiest first.
func topPages(p []rules.PageCount) []rules.PageCount {
	slices.SortFunc(p, func(a, b rules.PageCount) int { return cmpCount(a.Count, b.Count) })
	return p[:min(len(p), maxSumPages)]
}

// cmpCount orders counts highest first.
func cmpCount(a, b uint64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}
