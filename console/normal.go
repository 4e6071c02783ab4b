package console

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/pagewatch/pagewatch/domain/clocks"
	"github.com/pagewatch/pagewatch/domain/rules"
)

// A page's normal as the rules see it: the live view's "× normal", the
// page chart's band and the rules page's "usual A–B" all ask the same
// detector the sweep asks (rules.Detector), over the page's hours, so
// the console never shows a normal the sweep would not judge by.

// normalRule is the first rule watching the page that has a normal of
// its own (unusual, spike, new_page: a rolling per-page rule whose
// detector lists baseline windows); nil when only threshold rules (or
// none) watch it.
func normalRule(rs []rules.Rule, site, path string, now time.Time) *rules.Rule {
	for i := range rs {
		if r := &rs[i]; hasNormal(r, now) && r.Matches(site, path) {
			return r
		}
	}
	return nil
}

// hasNormal reports whether the rule judges each page against its own
// normal: a per-page rolling rule whose detector lists baseline windows.
func hasNormal(r *rules.Rule, now time.Time) bool {
	return r.Aggregate != rules.Sum && r.Window.Kind == rules.Rolling && len(r.BaselineSpans(now, time.Time{})) > 0
}

// pageHours are a page's views per UTC hour, and the first hour with
// any: before it the page's views are unknown, not zero (as the sweep
// leaves out windows before a site's data began).
type pageHours struct {
	n     map[int64]uint64
	start time.Time      // zero: no history at all
	clock *time.Location // the site's learned clocks (clockOf)
	// trends is the page's trend by rules.TrendFrom's Unix seconds, as
	// the sweep reads it from the page's days (trendAt).
	trends map[int64]rules.Trend
}

// trendAt is the page's trend and noise for r's windows ending at end,
// as the sweep reads them.
func (h pageHours) trendAt(r *rules.Rule, end time.Time) rules.Trend {
	if !rules.FollowsTrend(r) {
		return rules.Trend{}
	}
	from := rules.TrendFrom(end)
	if tr, ok := h.trends[from.Unix()]; ok {
		return tr
	}
	days := rules.DailyViews(from, h.start, func(day time.Time) float64 {
		var n uint64
		for t := day; t.Before(day.AddDate(0, 0, 1)); t = t.Add(time.Hour) {
			n += h.n[t.Unix()]
		}
		return float64(n)
	})
	tr := rules.PageTrend(days)
	tr.Noise, tr.NoiseOK = rules.ReadNoise(end, h.start, func(t time.Time) float64 {
		return float64(h.n[t.Unix()])
	})
	if h.trends != nil {
		h.trends[from.Unix()] = tr
	}
	return tr
}

// clockOf is the clocks r reads the site's normal on, as the sweep has
// learned them by now (rules.SpansOn): nil for UTC's, or for a rule that
// names its zone or learns none. A chart of past days is drawn on
// today's clocks: in the days after a change before the sweep learned
// them, it judged on UTC's.
func clockOf(ctx context.Context, l *clocks.Learner, r *rules.Rule, site string, now time.Time) *time.Location {
	if l == nil || !rules.LearnsClocks(r) {
		return nil
	}
	of, _ := l.At(ctx, now, rules.ClocksReach([]*rules.Rule{r})) // on an error, logged, those learned before
	return of[site]
}

// readHours reads the page's hours reaching back as far as the rule's
// normal for windows ending in [from, to] looks. The page's history
// begins where its site's does (siteStart, when known): a page new on a
// site with weeks of data had no views before, and the sweep judges it
// against those zeros, so the console does too.
func readHours(ctx context.Context, st TrafficStore, r *rules.Rule, site, path string, from, to, siteStart time.Time, clock *time.Location) (pageHours, error) {
	reach := from.Add(-r.Window.Rolling)
	for _, sp := range rules.SpansOn(r, from, time.Time{}, clock) {
		if sp.From.Before(reach) {
			reach = sp.From
		}
	}
	if t := rules.TrendFrom(from).AddDate(0, 0, -1); rules.FollowsTrend(r) && t.Before(reach) {
		// The page's days its trend is read from, and the day before:
		// read from the page's own first hit (the live view), a page
		// with a view that day has every trend day known, as the sweep
		// knows them from its site's start.
		reach = t
	}
	raw, err := st.PageHourSeries(ctx, site, path, reach, to)
	if err != nil {
		return pageHours{}, err
	}
	h := pageHours{n: map[int64]uint64{}, clock: clock, trends: map[int64]rules.Trend{}}
	for _, m := range raw {
		t := m.Minute.UTC().Truncate(time.Hour)
		h.n[t.Unix()] += m.Hits
		if h.start.IsZero() || t.Before(h.start) {
			h.start = t
		}
	}
	if !siteStart.IsZero() && (h.start.IsZero() || siteStart.Before(h.start)) {
		h.start = siteStart
	}
	return h, nil
}

// siteStarts keeps each site's first minute with hits for a while: it
// moves only when older data is loaded, and reading it costs a pass over
// the site's minutes.
type siteStarts struct {
	store TrafficStore
	now   func() time.Time
	mu    sync.Mutex
	known map[string]siteStart
}

type siteStart struct {
	at   time.Time // zero: the site has no hits
	read time.Time
}

// siteStartTTL is how long a site's first minute is kept.
const siteStartTTL = 10 * time.Minute

func newSiteStarts(store TrafficStore, now func() time.Time) *siteStarts {
	return &siteStarts{store: store, now: now, known: map[string]siteStart{}}
}

// of is the site's first minute with hits (zero: none).
func (c *siteStarts) of(ctx context.Context, site string) (time.Time, error) {
	now := c.now()
	c.mu.Lock()
	k, ok := c.known[site]
	c.mu.Unlock()
	if ok && now.Sub(k.read) < siteStartTTL {
		return k.at, nil
	}
	at, err := c.store.SiteStart(ctx, site)
	if err != nil {
		return time.Time{}, err
	}
	c.mu.Lock()
	c.known[site] = siteStart{at: at, read: now}
	c.mu.Unlock()
	return at, nil
}

// expectAt is the rule's normal for its window ending at end, from the
// page's hours; !OK when the history is too short for one.
func (h pageHours) expectAt(r *rules.Rule, end time.Time) rules.Expected {
	if h.start.IsZero() {
		return rules.Expected{}
	}
	spans := slices.DeleteFunc(rules.SpansOn(r, end, h.start, h.clock), func(sp rules.Interval) bool { return !sp.OfWindow() })
	counts := make([]uint64, len(spans))
	for i, sp := range spans {
		for t := sp.From; t.Before(sp.To); t = t.Add(time.Hour) {
			counts[i] += h.n[t.Unix()]
		}
	}
	return r.Normal(spans, counts, h.trendAt(r, end))
}

// usualRange is the count a page usually has in the rule's window: the
// detector's range (unusual), or for a kind without one (spike) its
// normal alone, as both ends.
func usualRange(e rules.Expected) (low, high float64) {
	if e.High > 0 {
		return e.Low, e.High
	}
	return e.Value, e.Value
}
