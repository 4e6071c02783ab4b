package sweep

import (
	"slices"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/pipeline/sweep/pagestate"
)

// A page new on a site is judged, in its launch, against the site's
// launches of the last 4 weeks (domain/rules/unusual_launches.go). A
// sweep reads them from the states it mirrors, before it judges any
// page: each page remembers its own launch (rules.LaunchOf), and its
// site (rules.State.Site), which its hashed key does not say.

// siteLaunches are the launches of each site under each rule that reads
// them, as the mirror holds them at now. Nil when no rule reads them.
func (s *Sweeper) siteLaunches(set *ruleSet, now time.Time) map[launchGroup]rules.Launches {
	byName := map[string]int{}
	for i, r := range set.rules {
		if r.ReadsLaunches() {
			byName[r.Name] = i
		}
	}
	if len(byName) == 0 {
		return nil
	}
	all := map[launchGroup][]rules.Launch{}
	s.state.each(func(key string, st pageState) {
		if st.Site == "" {
			return
		}
		b, ok := rules.LaunchOf(st.State)
		if !ok {
			return
		}
		name, _, _ := strings.Cut(key, ".")
		if i, ok := byName[name]; ok {
			g := launchGroup{i, st.Site}
			all[g] = append(all[g], rules.Launch{Page: key, Burst: b})
		}
	})
	out := make(map[launchGroup]rules.Launches, len(all))
	for g, list := range all {
		// The mirror is a map: in key order, ties are broken alike by
		// every sweeper and by a backtest.
		slices.SortFunc(list, func(a, b rules.Launch) int { return strings.Compare(a.Page, b.Page) })
		out[g] = rules.NewLaunches(list, now)
	}
	return out
}

// launchesFor is what observation o of rule ri is judged against in its
// launch: its site's launches but its own.
func launchesFor(launches map[launchGroup]rules.Launches, ri int, o observation) []rules.Burst {
	l, ok := launches[launchGroup{ri, o.site}]
	if !ok || l.Len() == 0 {
		return nil
	}
	return l.For(o.key)
}

// markLaunch names the site on a state that remembers a launch, for
// siteLaunches to find.
func markLaunch(st *rules.State, site string) {
	if st.Site != "" {
		return
	}
	if _, ok := rules.LaunchOf(*st); ok {
		st.Site = site
	}
}

// each calls fn with every mirrored state, under the store's lock.
func (s *stateStore) each(fn func(key string, st pagestate.State)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.cache {
		if k != progressKey {
			fn(k, e.st)
		}
	}
}
