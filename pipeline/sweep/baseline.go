package sweep

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pagewatch/pagewatch/domain/clocks"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// baselines computes the normals of the rules that have one (spike,
// new_page, unusual) for the pages a sweep observed, from ClickHouse's
// per-minute counts summed per hour. Only pages that can matter are asked
// for (a count at or above the rule's quiet level, or an open episode),
// and a normal is kept until the half hour it belongs to passes: it is
// made of whole past hours, so the steady-state sweep reads no history at
// all. A normal is kept per page, kind and spans, not per rule: many
// rules watching one page over the same hours share it.
type baselines struct {
	counts Counter
	seals  *sealing // how far page_hours is sealed: hours before it are read from there

	mu     sync.Mutex
	cache  map[normalKey]cachedExpected
	starts map[string]time.Time // site → first minute with hits
	read   time.Time            // when starts was read
	// groups remembers each rule's spans on each site for a window end:
	// they depend on the rule, the end and the site's data start, not on
	// the page.
	groups map[spanned]spanGroup
	// spanIDs numbers each set of spans (by spanKey), so a normal's key
	// hashes a number, not 20 spans of text, millions of times a sweep.
	spanIDs map[string]int
	// clocks is each site's learned clocks, for the rules that learn
	// them (zone: auto); a site on UTC's has none.
	clocks  map[string]*time.Location
	clocker *clocks.Learner
	// trends is each page's trend (trends.go) by rules.TrendFrom of the
	// windows' day; a page without one is missing.
	trends     map[time.Time]map[page]rules.Trend
	trendSites []string // the sites trends were read of (ruleSet.sites)
	// noiseLater: days whose pages' noise waits for their hours to be
	// sealed (readNoises).
	noiseLater map[time.Time]bool
	// reads is told of each day's reads of trends and noise (the
	// sweeper's metrics); nil: none is.
	reads  normalReads
	logger *slog.Logger
}

// normalReads is told of each daily read of the pages' trends ("trend")
// or noise ("noise"): whether it was read, and for how many pages.
type normalReads interface {
	normalRead(read string, ok bool, pages int)
}

func newBaselines(counts Counter, seals *sealing, logger *slog.Logger) *baselines {
	return &baselines{counts: counts, seals: seals, clocker: clocks.NewLearner(counts, logger), logger: logger}
}

// maxGroups bounds groups: catching up over a day makes a group per rule,
// site and minute.
const maxGroups = 100_000

// normalKey names one normal: a page's, under rules of one kind reading
// the same spans (a kind's normal follows from the spans and their counts:
// spike's minimum of samples from the same settings as its spans).
type normalKey struct {
	spans      int // the spans' number in baselines.spanIDs
	kind       rules.Kind
	measure    traffic.Measure
	site, path string
}

// spanGroupKey is the normals one query reads: the same spans, counted
// the same way.
type spanGroupKey struct {
	spans   int
	measure traffic.Measure
}

type spanned struct {
	rule int
	site string
	to   time.Time
}

type spanGroup struct {
	id    int
	spans []rules.Interval
}

type cachedExpected struct {
	slot   time.Time // the half hour the window end fell in
	exp    rules.Expected
	window time.Duration // the length of the windows it was made of
}

// dataStartsEvery is how often each site's first minute is read again.
const dataStartsEvery = time.Hour

// slotOf is the half hour a window end falls in: BaselineSpans gives the
// same spans throughout it (same_time rounds to the nearest hour, the
// others truncate).
func slotOf(end time.Time) time.Time { return end.Truncate(30 * time.Minute) }

// keyOf is the normal an observation of rule i needs, and its spans;
// false when the site has no data yet (an unknown normal). b.mu is held.
func (b *baselines) keyOf(r *rules.Rule, i int, site, path string, to time.Time) (normalKey, []rules.Interval, bool) {
	start, ok := b.starts[site]
	if !ok {
		return normalKey{}, nil, false
	}
	if b.groups == nil || len(b.groups) >= maxGroups {
		b.groups = map[spanned]spanGroup{}
	}
	if b.spanIDs == nil || len(b.spanIDs) >= maxGroups {
		// Numbers are reused after this: the normals cached under them go.
		b.spanIDs, b.cache = map[string]int{}, map[normalKey]cachedExpected{}
		clear(b.groups)
	}
	sp := spanned{i, site, to}
	g, ok := b.groups[sp]
	if !ok {
		g.spans = rules.SpansOn(r, to, start, b.clocks[site])
		key := spanKey(g.spans)
		id, ok := b.spanIDs[key]
		if !ok {
			id = len(b.spanIDs)
			b.spanIDs[key] = id
		}
		g.id = id
		b.groups[sp] = g
	}
	return normalKey{spans: g.id, kind: r.Kind(), measure: measureOf(r), site: site, path: path}, g.spans, true
}

// learnedClocks is each site's learned clocks, as the last sweep read
// them (a site on UTC's is not in it).
func (b *baselines) learnedClocks() map[string]*time.Location {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.clocks
}

// expect fills in exp for the observations of rules with a normal that
// need it. open reports whether a state key has an episode open.
func (b *baselines) expect(ctx context.Context, set *ruleSet, obs map[string][]observation, open func(key string) bool, now time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cache == nil {
		b.cache = map[normalKey]cachedExpected{}
	}
	if b.starts == nil || now.Sub(b.read) >= dataStartsEvery || now.Before(b.read) {
		starts, err := b.counts.DataStarts(ctx)
		if err != nil {
			return err
		}
		b.starts, b.read = starts, now
	}
	if reach := rules.ClocksReach(set.rules); reach > 0 {
		of, _ := b.clocker.At(ctx, now, reach) // on an error, logged, those learned before
		if !maps.Equal(of, b.clocks) {
			clear(b.groups) // spans read on a site's former clocks
		}
		b.clocks = of
	}
	// What is missing, grouped by the spans it reads: one query per run
	// of pages. Rules whose normals read the same hours (the same kind of
	// normal over the same window, as in a file of rules, one per site)
	// share it, and so do the sites whose data begins before those hours:
	// a query per rule was most of a first sweep's time.
	missing := map[spanGroupKey]map[normalKey][]ref{}
	spansOf := map[spanGroupKey][]rules.Interval{}
	slotOfGroup := map[spanGroupKey]time.Time{}
	trendDays := map[time.Time]bool{}
	for key, list := range obs {
		for i, o := range list {
			r := set.rules[o.pt.rule]
			if !r.HasNormal() || (quiet(r, o.count) && !open(key)) {
				continue
			}
			nk, spans, ok := b.keyOf(r, o.pt.rule, o.site, o.path, o.pt.to)
			if !ok {
				continue // no data yet: unknown normal
			}
			if loc := b.clocks[o.site]; loc != nil && rules.LearnsClocks(r) {
				list[i].clock = loc.String()
			}
			slot := slotOf(o.pt.to)
			if c, ok := b.cache[nk]; ok && c.slot.Equal(slot) {
				list[i].exp = c.exp
				continue
			}
			if rules.FollowsTrend(r) {
				trendDays[rules.TrendFrom(o.pt.to)] = true
			}
			gk := spanGroupKey{nk.spans, nk.measure}
			if missing[gk] == nil {
				missing[gk] = map[normalKey][]ref{}
				spansOf[gk], slotOfGroup[gk] = spans, slot
			}
			missing[gk][nk] = append(missing[gk][nk], ref{key, i})
		}
	}
	b.trendsFor(ctx, set, trendDays)
	for g, pages := range missing {
		runs := byPathBytes(pages, maxQueryPathBytes)
		all := len(pages) >= allPathsFrom
		if all {
			// Most of the sites' pages: one scan of their hours, every
			// page, beats naming them run after run.
			runs = [][]normalKey{slices.Concat(runs...)}
		}
		read := b.readNormals
		if g.measure == traffic.Visitors {
			read = b.readVisitorNormals
		}
		for _, run := range runs {
			if err := read(ctx, set, obs, slotOfGroup[g], spansOf[g], run, pages, all); err != nil {
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

// ref is one observation: obs[key][i].
type ref struct {
	key string
	i   int
}

// maxQueryPathBytes bounds the paths one hour-count query names: they are
// part of its text, and ClickHouse refuses a query over max_query_size
// (256 KiB by default). A rule looking down over 100k pages names them all.
const maxQueryPathBytes = 64 << 10

// allPathsFrom is how many pages' normals over the same spans are read by
// one query over every page of their sites, not by naming them.
const allPathsFrom = 5000

// byPathBytes splits the pages, in path order, into runs whose paths take
// at most limit bytes (a longer path is a run of its own).
func byPathBytes(pages map[normalKey][]ref, limit int) [][]normalKey {
	keys := make([]normalKey, 0, len(pages))
	for k := range pages {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b normalKey) int { return strings.Compare(a.path, b.path) })
	var out [][]normalKey
	start, size := 0, 0
	for i, k := range keys {
		if n := len(k.path) + 4; i > start && size+n > limit {
			out = append(out, keys[start:i])
			start, size = i, 0
		}
		size += len(k.path) + 4
	}
	if start < len(keys) {
		out = append(out, keys[start:])
	}
	return out
}

// readNormals reads the hours of spans for the pages of run in one query,
// computes their normals, gives them to the observations that wanted
// them and caches each for the half hour slot. b.mu is held.
func (b *baselines) readNormals(ctx context.Context, set *ruleSet, obs map[string][]observation, slot time.Time, spans []rules.Interval, run []normalKey, refs map[normalKey][]ref, all bool) error {
	sq := spanQuery(spans, run, all)
	q := traffic.HourQuery{Sites: sq.Sites, Paths: sq.Paths, AllPaths: all, Spans: sq.Spans, SealedBefore: b.seals.hoursBefore()}
	// Each hour read adds to the spans holding it, straight into one
	// slice of counts per page: at a million pages a map of hours per
	// page was most of a refresh's allocations.
	spansOf := map[int64][]int{}
	for j, sp := range spans {
		for t := sp.From; t.Before(sp.To); t = t.Add(time.Hour) {
			spansOf[t.Unix()] = append(spansOf[t.Unix()], j)
		}
	}
	counts := make(map[page][]uint64, len(run))
	var asked map[page]bool // every page: keep the hours of those asked about
	if all {
		asked = make(map[page]bool, len(run))
		for _, k := range run {
			asked[page{k.site, k.path}] = true
		}
	}
	err := b.counts.HourCounts(ctx, q, func(site, path string, hour time.Time, hits uint64) {
		p := page{site, path}
		if all && !asked[p] {
			return
		}
		in := spansOf[hour.Unix()]
		if len(in) == 0 {
			return
		}
		c := counts[p]
		if c == nil {
			c = make([]uint64, len(spans))
			counts[p] = c
		}
		for _, j := range in {
			c[j] += hits
		}
	})
	if err != nil {
		return fmt.Errorf("baselines of %d pages over %d spans: %w", len(run), len(spans), err)
	}
	var none []uint64
	for _, k := range run {
		c := counts[page{k.site, k.path}]
		if c == nil {
			if none == nil {
				none = make([]uint64, len(spans))
			}
			c = none // read only: a page with no hours in the spans
		}
		b.give(set, obs, slot, spans, k, refs[k], c)
	}
	return nil
}

// readVisitorNormals is readNormals for rules counting visitors: each
// span's distinct visitors, read whole, since a person seen in two hours
// of a span is one visitor of it.
func (b *baselines) readVisitorNormals(ctx context.Context, set *ruleSet, obs map[string][]observation, slot time.Time, spans []rules.Interval, run []normalKey, refs map[normalKey][]ref, all bool) error {
	q := spanQuery(spans, run, all)
	counts := map[page][]uint64{}
	err := b.counts.SpanVisitors(ctx, q, func(site, path string, span int, n uint64) {
		p := page{site, path}
		if counts[p] == nil {
			counts[p] = make([]uint64, len(spans))
		}
		counts[p][span] = n
	})
	if err != nil {
		return fmt.Errorf("visitor baselines of %d pages over %d spans: %w", len(run), len(spans), err)
	}
	for _, k := range run {
		rs := refs[k]
		c := counts[page{k.site, k.path}]
		if c == nil {
			c = make([]uint64, len(spans))
		}
		b.give(set, obs, slot, spans, k, rs, c)
	}
	return nil
}

// spanQuery asks for the spans of the pages of run (every page of their
// sites when all), sites and paths sorted and once each.
func spanQuery(spans []rules.Interval, run []normalKey, all bool) traffic.SpanQuery {
	q := traffic.SpanQuery{AllPaths: all}
	for _, sp := range spans {
		q.Spans = append(q.Spans, traffic.Span{From: sp.From, To: sp.To})
	}
	for _, k := range run {
		q.Sites = append(q.Sites, k.site)
		if !all {
			q.Paths = append(q.Paths, k.path)
		}
	}
	slices.Sort(q.Sites)
	q.Sites = slices.Compact(q.Sites)
	slices.Sort(q.Paths)
	q.Paths = slices.Compact(q.Paths)
	return q
}

// give makes the normal of page k from its spans' counts, gives it to
// the observations rs that wanted it and caches it for the half hour slot.
func (b *baselines) give(set *ruleSet, obs map[string][]observation, slot time.Time, spans []rules.Interval, k normalKey, rs []ref, counts []uint64) {
	first := obs[rs[0].key][rs[0].i]
	r := set.rules[first.pt.rule]
	e := r.Normal(spans, counts, b.trendOf(r, k, first.pt.to))
	for _, r := range rs {
		obs[r.key][r.i].exp = e
	}
	c := cachedExpected{slot: slot, exp: e}
	if len(spans) > 0 {
		c.window = spans[0].To.Sub(spans[0].From)
	}
	b.cache[k] = c
}

// siteRates is, for each site, the views a minute its pages' normals
// expect for a window ending at end: for each kind of normal over the
// same spans, the sum of its pages' normals (their bottom) over the
// window's minutes; the largest of those. A site none of whose pages
// has a normal above 0 is missing: nothing of it can drop.
func (b *baselines) siteRates(end time.Time) map[string]float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	slot := slotOf(end)
	type group struct {
		site  string
		spans int
		kind  rules.Kind
	}
	sums := map[group]float64{}
	for k, c := range b.cache {
		if c.slot.Equal(slot) && c.window > 0 && c.exp.OK && c.exp.Bottom > 0 {
			sums[group{k.site, k.spans, k.kind}] += c.exp.Bottom / c.window.Minutes()
		}
	}
	out := map[string]float64{}
	for g, v := range sums {
		out[g.site] = max(out[g.site], v)
	}
	return out
}

// known is the normal an observation needs, if one is cached for the
// half hour its window ends in.
func (b *baselines) known(r *rules.Rule, o observation) (rules.Expected, bool) {
	b.mu.Lock()
	nk, _, ok := b.keyOf(r, o.pt.rule, o.site, o.path, o.pt.to)
	c, cached := b.cache[nk]
	b.mu.Unlock()
	if !ok || !cached || !c.slot.Equal(slotOf(o.pt.to)) {
		return rules.Expected{}, false
	}
	return c.exp, true
}

// spanKey is spans as text, to group the pages that read the same hours
// and make the same normal of them: the same hours on two zones' clocks
// (UTC's and Tokyo's, which has no summer time) may end on a weekend on
// one and not the other, and a weekday's noise is read from weekdays.
// The tags too: the same hours are an hour's normal to one rule and the
// hour after it, read for a burst's climb only, to another.
func spanKey(spans []rules.Interval) string {
	var b strings.Builder
	for _, sp := range spans {
		b.WriteString(strconv.FormatInt(sp.From.Unix(), 36))
		b.WriteByte('-')
		b.WriteString(strconv.FormatInt(sp.To.Unix(), 36))
		b.WriteByte('#')
		b.WriteString(strconv.Itoa(sp.Tag))
		if sp.Weekend {
			b.WriteByte('w')
		}
		b.WriteByte(',')
	}
	return b.String()
}
