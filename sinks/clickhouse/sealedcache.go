package clickhouse

import (
	"context"
	"fmt"
	"sync"
)

// The page_days half of a window query is the same from one sweep to the
// next until a day is sealed: a steady sweep ending 10 s after the last
// asks for the same sealed boundary and the same first days (the week's
// Monday, the month's first, the quiet reach's midnight), and rereading
// them cost 0.8 s of ClickHouse at 100M hits (100k pages of 28 days, with
// FINAL), half of what a sweep spent counting. So a Client keeps the last
// two such halves (sealedCacheSize), and reads one again when querySealMark moved: a day
// was sealed for the first time or again, by this sweeper or another.
//
// What a kept half may miss is what a read of page_days would miss too: a
// late message on a sealed day counts from the seal that takes it in.
// The one write to page_days that no mark records, a sealer dying between
// a day's sums and its record, is redone by the next seal, which does
// record it.

// sealedCacheSize is how many halves a Client keeps: a sweeper asks for
// one per distinct window end (calendar windows closing under the lag
// tolerance end earlier than the rest), and each may hold every page.
const sealedCacheSize = 2

// sealedPages are the counts from page_days of every page under a plan,
// one per start (0 for a start that reads no sealed day).
type sealedPages struct {
	sites, paths []string
	all          []uint64 // row-major, n per page
	n            int
	bySite       map[string]*sitePages
}

// sitePages are one site's rows, by path, and one copy of its name.
type sitePages struct {
	name  string
	paths map[string]int32
}

// len is how many pages; 0 for nil, which finds nothing.
func (s *sealedPages) len() int {
	if s == nil {
		return 0
	}
	return len(s.sites)
}

// find is a page's row.
func (s *sealedPages) find(site, path string) (int, bool) {
	if s == nil {
		return 0, false
	}
	sp := s.bySite[site]
	if sp == nil {
		return 0, false
	}
	i, ok := sp.paths[path]
	return int(i), ok
}

// counts are row i's counts, to be read only.
func (s *sealedPages) counts(i int) []uint64 { return s.all[i*s.n : (i+1)*s.n] }

// sealMark is querySealMark's answer: sealed days, and their messages.
type sealMark struct{ days, batches uint64 }

type sealedEntry struct {
	key   string
	mark  sealMark
	pages *sealedPages
}

// sealedCache is a Client's kept halves, the most recently used first.
type sealedCache struct {
	mu      sync.Mutex
	entries []sealedEntry
}

func (c *sealedCache) get(key string, mark sealMark) (*sealedPages, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range c.entries {
		if e.key == key && e.mark == mark {
			copy(c.entries[1:i+1], c.entries[:i])
			c.entries[0] = e
			return e.pages, true
		}
	}
	return nil, false
}

func (c *sealedCache) put(key string, mark sealMark, p *sealedPages) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// An entry of the same key read at an older mark is stale for good.
	kept := c.entries[:0]
	for _, e := range c.entries {
		if e.key != key {
			kept = append(kept, e)
		}
	}
	c.entries = append([]sealedEntry{{key, mark, p}}, kept...)
	if len(c.entries) > sealedCacheSize {
		c.entries = c.entries[:sealedCacheSize]
	}
}

// sealedPages is the page_days half of plan p over sites, kept or read.
// The mark is read before page_days, so a seal in between leaves a newer
// half under an older mark, read again next time, never the reverse.
// keep: a query asked once neither uses a kept half nor keeps its own;
// cut: only pages over floor (windowDaysSQL's having).
func (cs Counts) sealedPages(ctx context.Context, p windowPlan, sites []string, keep, cut bool, floor uint64) (*sealedPages, error) {
	var mark sealMark
	if err := cs.c.conn.QueryRow(ctx, querySealMark).Scan(&mark.days, &mark.batches); err != nil {
		return nil, fmt.Errorf("window counts: sealed days: %w", err)
	}
	key := p.sealedKey(sites)
	if keep {
		if s, ok := cs.c.sealed.get(key, mark); ok {
			return s, nil
		}
	}
	n := len(p.starts)
	s := &sealedPages{n: n, bySite: map[string]*sitePages{}}
	sql, args := windowDaysSQL(p, sites, cut, floor)
	err := cs.scanCounts(ctx, sql, args, n, func(site, path string, c []uint64) {
		sp := s.bySite[site]
		if sp == nil {
			sp = &sitePages{name: site, paths: map[string]int32{}}
			s.bySite[site] = sp
		}
		sp.paths[path] = int32(len(s.sites))
		s.sites, s.paths = append(s.sites, sp.name), append(s.paths, path)
		s.all = append(s.all, c...)
	})
	if err != nil {
		return nil, fmt.Errorf("window counts: sealed days to %d: %w", p.sealedTo, err)
	}
	if keep {
		cs.c.sealed.put(key, mark, s)
	}
	return s, nil
}
