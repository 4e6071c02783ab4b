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
		if rules.ReadsLaunches(r) {
			byName[r.Name] = i
		}
	}
	if len(byName) == 0 {
		return nil
	}
	all := map[launchGroup][]rules.Launch{}
	s.state.eachLaunched(func(key string, st pageState) bool {
		b, ok := rules.LaunchOf(st.State)
		l := rules.Launch{Page: key, Burst: b}
		if !ok || l.Forgotten(now) {
			// Not read again unless its state is written again (a
			// page new once more): states are kept for good, and a
			// site that launches a page a day would add a state a day
			// to every sweep's reading.
			return false
		}
		name, _, _ := strings.Cut(key, ".")
		if i, ok := byName[name]; ok {
			g := launchGroup{i, st.Site}
			all[g] = append(all[g], l)
		}
		return true
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

// eachLaunched calls fn with every mirrored state that remembers a
// launch, under the store's lock; one fn returns false for is left out
// of the index until it is written again.
func (s *stateStore) eachLaunched(fn func(key string, st pagestate.State) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.launched {
		if e, ok := s.cache[k]; !ok || !fn(k, e.st) {
			delete(s.launched, k)
		}
	}
}

// noteLaunch keeps the index of launched states current for key, as
// the mirror now holds it. Call with s.mu held.
func (s *stateStore) noteLaunch(key string) {
	e, ok := s.cache[key]
	if ok && e.st.Site != "" {
		if s.launched == nil {
			s.launched = map[string]struct{}{}
		}
		s.launched[key] = struct{}{}
		return
	}
	delete(s.launched, key)
}

// launchedOf indexes a mirror's launched states (stateStore.launched).
func launchedOf(cache map[string]entry) map[string]struct{} {
	out := map[string]struct{}{}
	for k, e := range cache {
		if e.st.Site != "" {
			out[k] = struct{}{}
		}
	}
	return out
}
