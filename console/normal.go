package console

import (
	"context"
	"time"

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
	start time.Time // zero: no history at all
}

// readHours reads the page's hours reaching back as far as the rule's
// normal for windows ending in [from, to] looks.
func readHours(ctx context.Context, st TrafficStore, r *rules.Rule, site, path string, from, to time.Time) (pageHours, error) {
	reach := from.Add(-r.Window.Rolling)
	for _, sp := range r.BaselineSpans(from, time.Time{}) {
		if sp.From.Before(reach) {
			reach = sp.From
		}
	}
	raw, err := st.PageHourSeries(ctx, site, path, reach, to)
	if err != nil {
		return pageHours{}, err
	}
	h := pageHours{n: map[int64]uint64{}}
	for _, m := range raw {
		t := m.Minute.UTC().Truncate(time.Hour)
		h.n[t.Unix()] += m.Hits
		if h.start.IsZero() || t.Before(h.start) {
			h.start = t
		}
	}
	return h, nil
}

// expectAt is the rule's normal for its window ending at end, from the
// page's hours; !OK when the history is too short for one.
func (h pageHours) expectAt(r *rules.Rule, end time.Time) rules.Expected {
	if h.start.IsZero() {
		return rules.Expected{}
	}
	spans := r.BaselineSpans(end, h.start)
	counts := make([]uint64, len(spans))
	for i, sp := range spans {
		for t := sp.From; t.Before(sp.To); t = t.Add(time.Hour) {
			counts[i] += h.n[t.Unix()]
		}
	}
	return r.Normal(spans, counts)
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
