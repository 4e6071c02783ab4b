package sweep

import (
	"slices"
	"strconv"
	"sync"

	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/pipeline/sweep/pagestate"
)

// pageMatches is the rules watching a page, by index into the rule set,
// and the page's part of their state keys (pagestate.PageKey, a hash,
// worth computing once). Pages watched by the same rules share one
// slice of indexes (matchCache.interned): at a million pages under 34
// rules each, a state key per rule and page was 34M strings, and the
// cache could hold only a quarter of the pages read.
type pageMatches struct {
	page  string
	rules []int
}

// key is rule i's state key for the page.
func (set *ruleSet) key(i int, pm pageMatches) string {
	if k := set.sumKey[i]; k != "" {
		return k
	}
	return pagestate.RuleKey(set.rules[i].Name, pm.page)
}

// defaultMaxMatches bounds the pages whose matches a sweep remembers. A
// sum rule, or a rule that looks down, reads every page of its sites, and
// paths are the clients' to make up: a site that answers any path with a
// 200 would otherwise grow the cache by every path ever requested.
//
// The cache keeps what the last two sweeps read (sweepStarted): a page
// no sweep reads is forgotten a sweep later, and a sweep reading more
// pages than the bound finds the first maxMatches of them remembered,
// sweep after sweep. (It once started again from empty when full: at 1M
// pages read, no page was ever found, and every page's matches and
// SHA-256 state keys were computed every sweep, 46% of its CPU;
// docs/performance.md.) A page takes about 150 bytes (its name, its key,
// a shared slice of rules), so at most 2 × 2^20 pages are some 300 MiB.
const defaultMaxMatches = 1 << 20

// maxInterned bounds the distinct sets of rules remembered: exact-path
// rules make one per page they name, no more.
const maxInterned = 1 << 16

// matchCache remembers which rules watch the pages the last sweeps read.
type matchCache struct {
	// maxMatches is defaultMaxMatches but in tests, which fill a small
	// cache rather than a real one.
	maxMatches int

	mu       sync.Mutex
	matches  map[page]pageMatches // this sweep's pages: at most maxMatches
	older    map[page]pageMatches // the sweep before's, not read again yet
	interned map[string][]int     // sets of rules, by their indexes as text
	buf      []byte
}

func newMatchCache() matchCache {
	return matchCache{maxMatches: defaultMaxMatches, matches: map[page]pageMatches{}, interned: map[string][]int{}}
}

// matching returns the rules watching a page.
func (set *ruleSet) matching(site, path string) pageMatches {
	p := page{site, path}
	set.mu.Lock()
	m, ok := set.matches[p]
	if !ok {
		if m, ok = set.older[p]; ok {
			delete(set.older, p)
			set.keep(p, m)
		}
	}
	set.mu.Unlock()
	if ok {
		return m
	}
	idx := slices.Clone(set.exact[p])
	for _, i := range set.bySite[site] {
		if set.rules[i].Matches(site, path) {
			idx = append(idx, i)
		}
	}
	if site != "" {
		for _, i := range set.bySite[""] {
			if set.rules[i].Matches(site, path) {
				idx = append(idx, i)
			}
		}
	}
	m = pageMatches{rules: idx}
	if slices.ContainsFunc(idx, func(i int) bool { return set.rules[i].Aggregate != rules.Sum }) {
		m.page = pagestate.PageKey(site, path)
	}
	set.mu.Lock()
	m.rules = set.intern(idx)
	set.keep(p, m)
	set.mu.Unlock()
	return m
}

// intern returns the one slice holding these rule indexes. c.mu is held.
func (c *matchCache) intern(idx []int) []int {
	c.buf = c.buf[:0]
	for _, i := range idx {
		c.buf = strconv.AppendInt(c.buf, int64(i), 36)
		c.buf = append(c.buf, ',')
	}
	if s, ok := c.interned[string(c.buf)]; ok {
		return s
	}
	if len(c.interned) >= maxInterned {
		clear(c.interned) // the pages cached keep their slices
	}
	c.interned[string(c.buf)] = idx
	return idx
}

// keep remembers a page's matches for this sweep, while there is room.
// c.mu is held.
func (c *matchCache) keep(p page, m pageMatches) {
	if len(c.matches) < c.maxMatches {
		c.matches[p] = m
	}
}

// sweepStarted ages the cache: what the last sweep read becomes older,
// found again (and kept) as this sweep reads it, and forgotten at the
// next sweep if it is not.
func (c *matchCache) sweepStarted() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.older, c.matches = c.matches, make(map[page]pageMatches, len(c.matches))
}
