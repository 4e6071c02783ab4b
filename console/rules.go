package console

import (
	"cmp"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/pagewatch/pagewatch/domain/rules"
)

const (
	rulesPageSize = 50
	nearestPages  = 5
	// topScan is how many of a site's busiest pages are read per window
	// (times the sites on the page of rules) to find those nearest a
	// rule's threshold: the nearest are among the busiest unless the
	// rule matches only quiet pages.
	topScan = 500
	// lastFiredSpan is how far back "last fired" looks.
	lastFiredSpan = 90 * 24 * time.Hour
)

type rulesView struct {
	Rules  []ruleView `json:"rules"`
	Total  int        `json:"total"`
	Offset int        `json:"offset"`
	Prev   int        `json:"prev_offset"`
	Next   int        `json:"next_offset"`
}

type ruleView struct {
	Name       string     `json:"name"`
	Kind       string     `json:"kind"` // threshold, spike, new_page
	Site       string     `json:"site"`
	Match      string     `json:"match"`
	Window     string     `json:"window"`
	Aggregate  string     `json:"aggregate"`
	Thresholds []uint64   `json:"thresholds,omitempty"`
	LastFired  time.Time  `json:"last_fired,omitzero"`
	LastShown  string     `json:"-"`
	Pages      []rulePage `json:"pages"`
	Note       string     `json:"note,omitempty"`
}

type rulePage struct {
	Site      string  `json:"site"`
	Path      string  `json:"path"`
	Count     uint64  `json:"count"`
	Percent   float64 `json:"percent_of_threshold"`
	State     string  `json:"state"` // armed, fired, cooldown, pending; normal, episode, held
	LastFired string  `json:"last_fired,omitempty"`
	// For a rule with a normal (unusual, spike, new_page): the page's
	// usual range of the count in the window ("usual 80–140"), and its
	// state in words ("episode open since ...", "held: mostly one
	// client: ...").
	Low    float64 `json:"usual_low,omitempty"`
	High   float64 `json:"usual_high,omitempty"`
	Usual  string  `json:"usual,omitempty"`
	Detail string  `json:"detail,omitempty"`
}

// rulePages are the rules and the pages nearest to each.
type rulePages struct{ *frame }

func (s *rulePages) rulesPage(w http.ResponseWriter, r *http.Request) {
	all := slices.Clone(s.deps.Rules())
	slices.SortFunc(all, func(a, b rules.Rule) int { return cmp.Compare(a.Name, b.Name) })
	v := rulesView{Total: len(all), Prev: -1, Next: -1, Rules: []ruleView{}}
	if o, err := strconv.Atoi(r.URL.Query().Get("offset")); err == nil && o > 0 && o < len(all) {
		v.Offset = o
	}
	page := all[v.Offset:min(v.Offset+rulesPageSize, len(all))]
	if v.Offset > 0 {
		v.Prev = max(v.Offset-rulesPageSize, 0)
	}
	if v.Offset+rulesPageSize < len(all) {
		v.Next = v.Offset + rulesPageSize
	}
	ctx := r.Context()
	now := s.deps.Now()
	names := make([]string, len(page))
	for i, rule := range page {
		names[i] = rule.Name
	}
	// When each rule last fired and the counts of their pages, read at
	// once: neither needs the other.
	var (
		fired  []CrossingRow
		counts map[time.Duration][]PageViews
	)
	err := together(
		func() (err error) {
			if len(names) > 0 {
				fired, err = s.deps.Store.LastFired(ctx, names, now.Add(-lastFiredSpan))
			}
			return wrap("when rules last fired", err)
		},
		func() (err error) {
			counts, err = s.ruleCounts(r, page, now)
			return wrap("the rules' counts", err)
		},
	)
	if err != nil {
		s.failErr(w, r, "reading the rules", err)
		return
	}
	last := map[string]time.Time{}
	for _, x := range fired {
		if x.CrossedAt.After(last[x.Rule]) {
			last[x.Rule] = x.CrossedAt
		}
	}
	// Each rule's nearest pages with the sweeper's states, all rules at
	// once: a state is a NATS read.
	var nearest []func() error
	for _, rule := range page {
		rv := ruleView{Name: rule.Name, Kind: string(rule.Kind()), Site: rule.Site, Match: matchText(rule), Window: windowText(rule.Window),
			Aggregate: string(cmp.Or(rule.Aggregate, rules.PerPage)), Thresholds: rule.Thresholds, LastFired: last[rule.Name], Pages: []rulePage{}}
		rv.LastShown = s.timeIn(rv.LastFired)
		win := windowLength(rule.Window)
		switch {
		case hasNormal(&rule, now):
			rv.Note = "judged against each page's own normal: each page's count in the window against its usual range"
			i := len(v.Rules)
			nearest = append(nearest, func() (err error) {
				v.Rules[i].Pages, err = s.normalPages(r, rule, fired, now)
				return err
			})
		case rule.HasNormal():
			rv.Note = "judged against each page's own normal: see the live view"
		case win == 0:
			rv.Note = "all-time window: counts are not read here"
		default:
			i := len(v.Rules)
			nearest = append(nearest, func() (err error) {
				v.Rules[i].Pages, err = s.nearest(r, rule, counts[win], now)
				return err
			})
		}
		v.Rules = append(v.Rules, rv)
	}
	if err := together(nearest...); err != nil {
		s.failErr(w, r, "reading the sweeper's state", err)
		return
	}
	s.render(w, r, "rules", "Rules", v)
}

// exactPath is the one page a rule watches, if it watches one.
func exactPath(r rules.Rule) (string, bool) {
	if r.Site == "" || r.Aggregate == rules.Sum {
		return "", false
	}
	p := cmp.Or(r.Path, r.Match.Exact)
	return p, p != ""
}

// ruleCounts reads, per window length of the page's threshold rules,
// the counts of the pages they watch: the rules of one page each by the
// pages' key, the others through the busiest pages of their sites. A
// few reads for the 50 rules, however they are spread.
func (s *rulePages) ruleCounts(r *http.Request, page []rules.Rule, now time.Time) (map[time.Duration][]PageViews, error) {
	type set struct{ sites, paths map[string]bool }
	exact, wide := map[time.Duration]*set{}, map[time.Duration]*set{}
	add := func(m map[time.Duration]*set, win time.Duration, site, path string) {
		if m[win] == nil {
			m[win] = &set{map[string]bool{}, map[string]bool{}}
		}
		m[win].sites[site], m[win].paths[path] = true, true
	}
	for _, rule := range page {
		win := windowLength(rule.Window)
		if rule.HasNormal() || win == 0 {
			continue
		}
		if p, ok := exactPath(rule); ok {
			add(exact, win, rule.Site, p)
		} else {
			add(wide, win, rule.Site, "")
		}
	}
	// The reads are independent: made at once, the page waits for the
	// slowest, not for their sum.
	out := map[time.Duration][]PageViews{}
	var (
		mu    sync.Mutex
		reads []func() error
	)
	keep := func(win time.Duration, pv []PageViews) {
		mu.Lock()
		defer mu.Unlock()
		out[win] = append(out[win], pv...)
	}
	for win, st := range exact {
		reads = append(reads, func() error {
			pv, err := s.deps.Store.PageCounts(r.Context(), slices.Collect(maps.Keys(st.sites)), slices.Collect(maps.Keys(st.paths)), now.Add(-win), now)
			keep(win, pv)
			return err
		})
	}
	for win, st := range wide {
		site := ""
		if len(st.sites) == 1 {
			for k := range st.sites {
				site = k
			}
		}
		reads = append(reads, func() error {
			pv, err := s.deps.Store.TopPages(r.Context(), site, now.Add(-win), now, topScan*len(st.sites))
			keep(win, pv)
			return err
		})
	}
	if err := together(reads...); err != nil {
		return nil, err
	}
	for win, pv := range out {
		slices.SortFunc(pv, func(a, b PageViews) int {
			return cmp.Or(cmp.Compare(b.Views, a.Views), cmp.Compare(a.Site, b.Site), cmp.Compare(a.Path, b.Path))
		})
		// A page read both ways is the same count twice.
		out[win] = slices.CompactFunc(pv, func(a, b PageViews) bool { return a.Site == b.Site && a.Path == b.Path })
	}
	return out, nil
}

// nearest are the rule's pages with the highest count against its
// (first not yet fired) threshold, with the sweeper's state of each.
func (s *rulePages) nearest(r *http.Request, rule rules.Rule, top []PageViews, now time.Time) ([]rulePage, error) {
	var out []rulePage
	sum := rule.Aggregate == rules.Sum
	var total uint64
	for _, p := range top {
		if !rule.Matches(p.Site, p.Path) {
			continue
		}
		if sum {
			total += p.Views
			continue
		}
		if len(out) < nearestPages {
			out = append(out, rulePage{Site: p.Site, Path: p.Path, Count: p.Views})
		}
	}
	if sum {
		out = append(out, rulePage{Site: rule.Site, Path: "(sum of " + matchText(rule) + ")", Count: total})
	}
	// The sweeper's state of each page, read at once (a round trip each).
	states, found := make([]RuleState, len(out)), make([]bool, len(out))
	if s.deps.RuleStates != nil {
		reads := make([]func() error, len(out))
		for i := range out {
			reads[i] = func() (err error) {
				states[i], found[i], err = s.deps.RuleStates.State(r.Context(), rule.Name, out[i].Site, out[i].Path, sum)
				return err
			}
		}
		if err := together(reads...); err != nil {
			return nil, err
		}
	}
	for i := range out {
		st, ok := states[i], found[i]
		th := rule.Thresholds[0]
		if ok {
			for _, t := range rule.Thresholds {
				if st.Fired == nil || !slices.Contains(st.Fired, t) {
					th = t
					break
				}
			}
			out[i].LastFired = s.timeIn(st.LastFired)
			if st.LastFired.IsZero() {
				out[i].LastFired = ""
			}
		}
		out[i].Percent = 100 * float64(out[i].Count) / float64(max(th, 1))
		out[i].State = pageState(rule, st, ok, now)
	}
	return out, nil
}

// pageState names a rule's state on a page as the rules page shows it.
func pageState(rule rules.Rule, st RuleState, ok bool, now time.Time) string {
	switch {
	case !ok:
		return "armed"
	case st.Pending > 0:
		return "pending" // claimed, not yet handed to the workers
	case rule.Rearm.Cooldown > 0 && len(st.Fired) > 0 && now.Before(st.LastFired.Add(rule.Rearm.Cooldown)):
		return "cooldown"
	case len(st.Fired) > 0 || st.Open:
		return "fired"
	}
	return "armed"
}

// ruleKind is the rule's kind as its detector names it.

func matchText(r rules.Rule) string {
	m := r.Match
	switch {
	case r.Path != "":
		return r.Path
	case m.Exact != "":
		return m.Exact
	case m.Prefix != "":
		return "prefix " + m.Prefix
	case m.Glob != "":
		return "glob " + m.Glob
	case m.Regex != "":
		return "regex " + m.Regex
	}
	return "every page"
}

// together runs independent reads at once and returns the first error.
func together(reads ...func() error) error {
	errs := make(chan error, len(reads))
	for _, read := range reads {
		go func() { errs <- read() }()
	}
	var first error
	for range reads {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
