package sweep

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/pagewatch/pagewatch/domain/clocks"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// A rule with `zone: auto` reads each site's normal on the clocks its
// readers keep, learned from the site's views per hour in the week after
// each change of a candidate clock (package clocks). A sweep and a
// backtest learn them the same way, from the views before the moment
// judged: a backtest never from views a sweep would not have had.

// clockReach is how far back a change of clocks can still move a normal:
// the longest weekly profile, and its days.
const clockReach = (rules.MaxUnusualWeeks + 1) * 7 * 24 * time.Hour

// clocksEvery is how often a sweep weighs again the changes whose week
// is not over.
const clocksEvery = time.Hour

// evidenceWeek is how long after a change its evidence grows, and
// evidenceBefore how far before it the evidence reads (a week back).
const (
	evidenceWeek   = 7 * 24 * time.Hour
	evidenceBefore = 7*24*time.Hour + time.Hour
)

// siteClocks keeps each site's learned clocks for a sweep: the evidence
// of a change whose week is over is kept as it is, the others' read
// again every clocksEvery.
type siteClocks struct {
	counts Counter
	logger *slog.Logger
	mu     sync.Mutex
	read   time.Time
	final  map[clocks.Change]map[string]clocks.Evidence
	of     map[string]*time.Location // nil for a site on UTC's
}

// clocksAt is each site's clocks as of now (nil: UTC's).
func (c *siteClocks) clocksAt(ctx context.Context, now time.Time) (map[string]*time.Location, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.of != nil && now.Sub(c.read) < clocksEvery && !now.Before(c.read) {
		return c.of, nil
	}
	if c.final == nil {
		c.final = map[clocks.Change]map[string]clocks.Evidence{}
	}
	now = now.UTC().Truncate(time.Hour)
	bySite := map[string][]clocks.Evidence{}
	for _, ch := range clocks.Changes(now.Add(-clockReach), now) {
		evs, ok := c.final[ch]
		if !ok {
			end := ch.At.Add(evidenceWeek)
			if now.Before(end) {
				end = now
			}
			rows, err := c.counts.SiteHours(ctx, ch.At.Add(-evidenceBefore), end)
			if err != nil {
				return nil, err
			}
			evs = weighSites(rows, ch, end)
			if !end.Before(ch.At.Add(evidenceWeek)) {
				c.final[ch] = evs
			}
		}
		for site, ev := range evs {
			bySite[site] = append(bySite[site], ev)
		}
	}
	for ch := range c.final {
		if ch.At.Before(now.Add(-clockReach)) {
			delete(c.final, ch)
		}
	}
	of := map[string]*time.Location{}
	for site, evs := range bySite {
		v := clocks.Learned(evs)
		if v.Clock.Loc == nil {
			continue
		}
		of[site] = v.Clock.Loc
		if c.of[site] != v.Clock.Loc && c.logger != nil {
			c.logger.Info("a site's readers keep a zone's clocks: its normals are read on them",
				"site", site, "zone", v.Clock.Name, "change", v.Evidence.Change.At, "z", v.Evidence.Z, "pairs", v.Evidence.Pairs)
		}
	}
	c.of, c.read = of, now
	return of, nil
}

// weighSites weighs ch for each site from its views per hour in rows,
// the hours from its first row on known (none: no views).
func weighSites(rows []traffic.SiteHour, ch clocks.Change, now time.Time) map[string]clocks.Evidence {
	views := map[string]map[time.Time]float64{}
	first := map[string]time.Time{}
	for _, r := range rows {
		if views[r.Site] == nil {
			views[r.Site] = map[time.Time]float64{}
		}
		h := r.Hour.UTC()
		views[r.Site][h] += float64(r.Hits)
		if f, ok := first[r.Site]; !ok || h.Before(f) {
			first[r.Site] = h
		}
	}
	out := make(map[string]clocks.Evidence, len(views))
	for site, vs := range views {
		from := first[site]
		out[site] = clocks.Weigh(func(h time.Time) (float64, bool) {
			return vs[h], !h.Before(from)
		}, ch, now)
	}
	return out
}

// siteViews is a backtest's views of a site per UTC hour, and the clocks
// learned from them at each hour judged.
type siteViews struct {
	hours  map[time.Time]float64
	first  time.Time
	learnt map[time.Time]*time.Location
	final  map[clocks.Change]clocks.Evidence // as siteClocks.final
}

func (v *siteViews) add(minute time.Time, hits uint64) {
	h := minute.UTC().Truncate(time.Hour)
	if v.hours == nil {
		v.hours, v.first = map[time.Time]float64{}, h
	}
	v.hours[h] += float64(hits)
	if h.Before(v.first) {
		v.first = h
	}
}

// clockAt is the site's clocks as a sweep at t would have learned them
// (nil: UTC's).
func (v *siteViews) clockAt(t time.Time) *time.Location {
	if v.hours == nil {
		return nil
	}
	h := t.UTC().Truncate(time.Hour)
	if loc, ok := v.learnt[h]; ok {
		return loc
	}
	if v.learnt == nil {
		v.learnt, v.final = map[time.Time]*time.Location{}, map[clocks.Change]clocks.Evidence{}
	}
	var evs []clocks.Evidence
	for _, ch := range clocks.Changes(h.Add(-clockReach), h) {
		ev, ok := v.final[ch]
		if !ok {
			ev = clocks.Weigh(func(at time.Time) (float64, bool) {
				return v.hours[at], !at.Before(v.first)
			}, ch, h)
			if !h.Before(ch.At.Add(evidenceWeek)) {
				v.final[ch] = ev
			}
		}
		evs = append(evs, ev)
	}
	verdict := clocks.Learned(evs)
	v.learnt[h] = verdict.Clock.Loc
	return verdict.Clock.Loc
}
