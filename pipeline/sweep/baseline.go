package sweep

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// baselines computes the normals of spike and new_page rules for the
// pages a sweep observed, from ClickHouse's per-minute counts summed per
// hour. Only pages that can matter are asked for (a count at or above the
// rule's quiet level, or an open episode), and a normal is kept until the
// half hour it belongs to passes: it is made of whole past hours, so the
// steady-state sweep reads no history at all.
type baselines struct {
	mu     sync.Mutex
	cache  map[string]cachedExpected // state key → its normal
	starts map[string]time.Time      // site → first minute with hits
	read   time.Time                 // when starts was read
}

type cachedExpected struct {
	slot time.Time // the half hour the window end fell in
	exp  rules.Expected
}

// dataStartsEvery is how often each site's first minute is read again.
const dataStartsEvery = time.Hour

// slotOf is the half hour a window end falls in: BaselineSpans gives the
// same spans throughout it (same_time rounds to the nearest hour, the
// others truncate).
func slotOf(end time.Time) time.Time { return end.Truncate(30 * time.Minute) }

// expect fills in exp for the observations of spike and new_page rules
// that need it. open reports whether a state key has an episode open.
func (s *Sweeper) expect(ctx context.Context, set *ruleSet, obs map[string][]observation, open func(key string) bool, now time.Time) error {
	b := s.baselines
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cache == nil {
		b.cache = map[string]cachedExpected{}
	}
	if b.starts == nil || now.Sub(b.read) >= dataStartsEvery || now.Before(b.read) {
		starts, err := s.counts.DataStarts(ctx)
		if err != nil {
			return err
		}
		b.starts, b.read = starts, now
	}
	// What is missing, grouped by rule and half hour: one query each.
	type group struct {
		rule int
		slot time.Time
	}
	type want struct {
		key        string
		i          int // into obs[key]
		site, path string
		spans      []rules.Interval
	}
	missing := map[group][]want{}
	for key, list := range obs {
		for i, o := range list {
			r := set.rules[o.pt.rule]
			if r.Kind() == rules.KindThreshold || (quiet(r, o.count) && !open(key)) {
				continue
			}
			slot := slotOf(o.pt.to)
			if c, ok := b.cache[key]; ok && c.slot.Equal(slot) {
				list[i].exp = c.exp
				continue
			}
			start, ok := b.starts[o.site]
			if !ok {
				continue // no data yet: unknown normal
			}
			g := group{o.pt.rule, slot}
			missing[g] = append(missing[g], want{key: key, i: i, site: o.site, path: o.path, spans: r.BaselineSpans(o.pt.to, start)})
		}
	}
	for g, ws := range missing {
		r := set.rules[g.rule]
		q := traffic.HourQuery{}
		for _, w := range ws {
			if !slices.Contains(q.Sites, w.site) {
				q.Sites = append(q.Sites, w.site)
			}
			q.Paths = append(q.Paths, w.path)
			for _, sp := range w.spans {
				q.Spans = append(q.Spans, traffic.Span{From: sp.From, To: sp.To})
			}
		}
		slices.Sort(q.Paths)
		q.Paths = slices.Compact(q.Paths)
		hours := map[page]map[int64]uint64{}
		err := s.counts.HourCounts(ctx, q, func(site, path string, hour time.Time, hits uint64) {
			p := page{site, path}
			if hours[p] == nil {
				hours[p] = map[int64]uint64{}
			}
			hours[p][hour.Unix()] += hits
		})
		if err != nil {
			return fmt.Errorf("baselines of rule %s: %w", r.Name, err)
		}
		for _, w := range ws {
			h := hours[page{w.site, w.path}]
			counts := make([]uint64, len(w.spans))
			for j, sp := range w.spans {
				for t := sp.From; t.Before(sp.To); t = t.Add(time.Hour) {
					counts[j] += h[t.Unix()]
				}
			}
			e := r.Expect(counts)
			obs[w.key][w.i].exp = e
			b.cache[w.key] = cachedExpected{slot: g.slot, exp: e}
		}
	}
	// Forget normals of half hours that passed.
	for k, c := range b.cache {
		if now.Sub(c.slot) > 2*time.Hour {
			delete(b.cache, k)
		}
	}
	return nil
}
