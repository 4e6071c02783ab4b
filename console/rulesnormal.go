package console

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
)

// The rules page's rules that judge each page against its own normal
// (unusual, spike, new_page): a threshold's "of threshold" means nothing
// for them, so each page's count is shown against its usual range
// ("1,204 views, usual 80–140"), from the same detector the sweep asks,
// and the pages with an episode open or a surge held come first.

// normalCandidates is how many of a rule's pages are read (their
// state, their hours) to find those to show: the pages it fired on of
// late and the busiest of its window.
const normalCandidates = 12

// normalPages are the rule's pages to show: those with an open episode
// or a held surge first, then the furthest above their usual range.
func (s *rulePages) normalPages(r *http.Request, rule rules.Rule, fired []CrossingRow, now time.Time) ([]rulePage, error) {
	ctx := r.Context()
	win := rule.Window.Rolling
	var cands [][2]string
	seen := map[[2]string]bool{}
	add := func(site, path string) {
		k := [2]string{site, path}
		if !seen[k] && len(cands) < normalCandidates && rule.Matches(site, path) {
			seen[k], cands = true, append(cands, k)
		}
	}
	for _, x := range fired {
		// A site's "no data" (no path) is no page, though a regex
		// match may take "".
		if x.Rule == rule.Name && x.Path != "" {
			add(x.Site, x.Path)
		}
	}
	top, err := s.deps.Store.TopPages(ctx, rule.Site, now.Add(-win), now, topScan)
	if err != nil {
		return nil, err
	}
	for _, p := range top {
		add(p.Site, p.Path)
	}
	if len(cands) == 0 {
		return []rulePage{}, nil
	}
	var sites, paths []string
	for _, c := range cands {
		sites, paths = append(sites, c[0]), append(paths, c[1])
	}
	counts, err := s.deps.Store.PageCounts(ctx, slices.Compact(slices.Sorted(slices.Values(sites))), slices.Compact(slices.Sorted(slices.Values(paths))), now.Add(-win), now)
	if err != nil {
		return nil, err
	}
	views := map[[2]string]uint64{}
	for _, c := range counts {
		views[[2]string{c.Site, c.Path}] = c.Views
	}
	out := make([]rulePage, len(cands))
	var mu sync.Mutex
	reads := make([]func() error, len(cands))
	for i, c := range cands {
		reads[i] = func() error {
			p, err := s.normalPage(ctx, &rule, c[0], c[1], views[c], now)
			mu.Lock()
			defer mu.Unlock()
			out[i] = p
			return err
		}
	}
	if err := together(reads...); err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b rulePage) int {
		return cmp.Or(cmp.Compare(stateRank(a.State), stateRank(b.State)), cmp.Compare(b.Percent, a.Percent), cmp.Compare(b.Count, a.Count))
	})
	return out[:min(len(out), nearestPages)], nil
}

// normalPage is one page of a rule with a normal: its count, its usual
// range and the sweeper's state of it. Percent is the count against the
// top of the range, for ordering.
func (s *rulePages) normalPage(ctx context.Context, rule *rules.Rule, site, path string, count uint64, now time.Time) (rulePage, error) {
	p := rulePage{Site: site, Path: path, Count: count, State: "normal"}
	start, err := s.starts.of(ctx, site)
	if err != nil {
		return p, err
	}
	hours, err := readHours(ctx, s.deps.Store, rule, site, path, now, now, start, clockOf(ctx, s.clocks, rule, site, now))
	if err != nil {
		return p, err
	}
	// The sweeper's state first: a page at a new level is judged there.
	var st RuleState
	if s.deps.RuleStates != nil {
		read, ok, err := s.deps.RuleStates.State(ctx, rule.Name, site, path, false)
		if err != nil {
			return p, err
		}
		if ok {
			st = read
		}
	}
	if e := rules.AtLevel(rule, st.Level, hours.expectAt(rule, now), now); e.OK {
		low, high := usualRange(e)
		p.Low, p.High, p.Usual = low, high, "usual "+rangeText(low, high)
		p.Percent = 100 * float64(count) / max(high, 1)
		// Outside its range with no episode open is not "normal": the
		// sweeper has not told it (its own usual bursts, a first week's
		// twice the evidence, a drop not yet down_for long, a floor), or
		// has not swept it yet.
		switch c := float64(count); {
		case e.High == 0:
			// A normal of one figure, not a range (a spike rule's):
			// any count but it would read outside.
		case c > high:
			p.State, p.Detail = "outside", "above its usual range, no episode"
		case c < low:
			p.State, p.Detail = "outside", "below its usual range, no episode"
		}
	} else {
		p.Usual = "no usual range yet: too little history"
	}
	switch {
	case p.State == "normal" && st.Level != nil && !st.Level.Ended:
		// Said, so a page at 2.5 × what its chart shows a month ago
		// reads as judged at its level, not missed.
		p.Detail = "normal at its new level: " + (&crossing.Why{Raised: st.Level.Ratio()}).RaisedText() +
			" its old, since " + s.timeIn(st.Level.Since())
	case st.Held != "":
		p.State, p.Detail = "held", "held: "+st.Held
	case st.Open:
		p.State, p.Detail = "episode", "episode open"
		if !st.OpenSince.IsZero() {
			p.Detail += " since " + s.timeIn(st.OpenSince)
		}
	}
	if !st.LastFired.IsZero() {
		p.LastFired = s.timeIn(st.LastFired)
	}
	return p, nil
}

// stateRank orders the rules page's pages: open episodes, then held
// surges, then pages outside their range, then the rest.
func stateRank(state string) int {
	switch state {
	case "episode":
		return 0
	case "held":
		return 1
	case "outside":
		return 2
	}
	return 3
}
