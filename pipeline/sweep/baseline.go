package sweep

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
	// What is missing, grouped by half hour and the spans it reads: one
	// query each. Rules whose baselines read the same hours (the same
	// kind of baseline over the same window, as in a file of spike
	// rules, one per site) share it, and so do the sites whose data
	// begins before those hours: a query per rule was most of a first
	// sweep's time.
	type group struct {
		slot  time.Time
		spans string
	}
	missing := map[group][]want{}
	spansOf := map[group][]rules.Interval{}
	// The spans of a rule's window depend on the rule, the window's end
	// and the site's data start, not on the page: made once for all the
	// pages of a site (a rule over 10k pages made them 10k times).
	type spanned struct {
		rule int
		site string
		to   time.Time
	}
	groupOf := map[spanned]group{}
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
			sp := spanned{o.pt.rule, o.site, o.pt.to}
			g, ok := groupOf[sp]
			if !ok {
				spans := r.BaselineSpans(o.pt.to, start)
				g = group{slot, spanKey(spans)}
				groupOf[sp] = g
				if _, ok := spansOf[g]; !ok {
					spansOf[g] = spans
				}
			}
			missing[g] = append(missing[g], want{key: key, i: i, rule: o.pt.rule, site: o.site, path: o.path})
		}
	}
	for g, all := range missing {
		spans := spansOf[g]
		for _, ws := range byPathBytes(all, maxQueryPathBytes) {
			if err := s.readNormals(ctx, set, obs, g.slot, spans, ws); err != nil {
				return err
			}
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

// maxQueryPathBytes bounds the paths one hour-count query names: they are
// part of its text, and ClickHouse refuses a query over max_query_size
// (256 KiB by default). A rule looking down over 100k pages names them all.
const maxQueryPathBytes = 64 << 10

// byPathBytes splits wants, in path order, into runs whose distinct
// paths take at most limit bytes (a longer path is a run of its own).
// Many rules watching one page want its normal once each: the query
// names the path once, so it counts once.
func byPathBytes(ws []want, limit int) [][]want {
	slices.SortFunc(ws, func(a, b want) int { return strings.Compare(a.path, b.path) })
	var out [][]want
	start, size := 0, 0
	for i, w := range ws {
		if i > 0 && w.path == ws[i-1].path {
			continue // same path: a want of another rule, or site
		}
		if n := len(w.path) + 4; i > start && size+n > limit {
			out = append(out, ws[start:i])
			start, size = i, 0
		}
		size += len(w.path) + 4
	}
	if start < len(ws) {
		out = append(out, ws[start:])
	}
	return out
}

// want is one observation whose normal is read.
type want struct {
	key        string
	i          int // into obs[key]
	rule       int
	site, path string
}

// readNormals reads the hours of spans for the pages of ws in one query
// and computes their normals, caching each for the half hour slot.
func (s *Sweeper) readNormals(ctx context.Context, set *ruleSet, obs map[string][]observation, slot time.Time, spans []rules.Interval, ws []want) error {

	q := traffic.HourQuery{SealedBefore: s.sealedHoursBefore()}
	for _, sp := range spans {
		q.Spans = append(q.Spans, traffic.Span{From: sp.From, To: sp.To})
	}
	for _, w := range ws {
		q.Sites = append(q.Sites, w.site)
		q.Paths = append(q.Paths, w.path)
	}
	slices.Sort(q.Sites)
	q.Sites = slices.Compact(q.Sites)
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
		return fmt.Errorf("baselines of %d pages over %d spans: %w", len(q.Paths), len(spans), err)
	}
	// A page's normal under rules of one kind over the same spans is one
	// normal (a kind's normal follows from the spans' counts: spike's
	// minimum of samples from the same settings as its spans), made once
	// for all the rules watching the page.
	type normalOf struct {
		page
		kind rules.Kind
	}
	made := map[normalOf]rules.Expected{}
	for _, w := range ws {
		r := set.rules[w.rule]
		k := normalOf{page{w.site, w.path}, r.Kind()}
		e, ok := made[k]
		if !ok {
			h := hours[k.page]
			counts := make([]uint64, len(spans))
			for j, sp := range spans {
				for t := sp.From; t.Before(sp.To); t = t.Add(time.Hour) {
					counts[j] += h[t.Unix()]
				}
			}
			e = r.Normal(spans, counts)
			made[k] = e
		}
		obs[w.key][w.i].exp = e
		s.baselines.cache[w.key] = cachedExpected{slot: slot, exp: e}
	}
	return nil
}

// cached is the normal of a state key for the half hour of end, if one
// is known.
func (b *baselines) cached(key string, end time.Time) (rules.Expected, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.cache[key]
	return c.exp, ok && c.slot.Equal(slotOf(end))
}

// settled reports whether an observation can be left out of a sweep: a
// page with no state of its own whose count, against its known normal,
// neither fires nor starts anything (Detector.Settled). A rule looking
// down observes every page with views in its baseline period each sweep;
// most are inside their usual range, and judging them changes nothing.
func (s *Sweeper) settled(r *rules.Rule, o observation) bool {
	exp, ok := s.baselines.cached(o.key, o.pt.to)
	if !ok || !s.state.none(o.key) {
		return false
	}
	o.exp = exp
	return r.Detector().Settled(o.ruleObservation())
}

// spanKey is spans as text, to group the wants that read the same hours.
func spanKey(spans []rules.Interval) string {
	var b strings.Builder
	for _, sp := range spans {
		b.WriteString(strconv.FormatInt(sp.From.Unix(), 36))
		b.WriteByte('-')
		b.WriteString(strconv.FormatInt(sp.To.Unix(), 36))
		b.WriteByte(',')
	}
	return b.String()
}
