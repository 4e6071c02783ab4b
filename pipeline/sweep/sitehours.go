package sweep

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

// How long a silence a site can have before its data is late depends on
// how often its data flows at that hour: a shop with hits every minute is
// late after data_late_after; a blog whose visitors come a few times an
// hour, each reading a few pages within a minute or two, is not late
// between its visits. Both a sweep (freshness.go) and a backtest
// (siterows.go) judge it the same way: from the share of each hour's
// minutes (or a backtest's steps) that have hits, on the site's median
// day, a Poisson stream's hazard per step, -ln(1 - share); a silence is
// late once those hazards add up to its bar (hourHazards.bar): a silence
// that long comes by chance once in a thousand of the site's days.
// Counting minutes with hits rather than views is what keeps a visit of
// five views in a minute from counting as five chances.

// hourHazards is a site's hazard per step at each UTC hour of the day.
type hourHazards [24]float64

// hazardsOf is the hazards from each hour's shares of steps with hits,
// one share per day (reordered). An hour without any takes the median
// of the others'.
func hazardsOf(shares *[24][]float64) hourHazards {
	var out hourHazards
	var known []float64
	for h := range 24 {
		out[h] = -1
		if len(shares[h]) > 0 {
			p := min(median(shares[h]), 1-1e-9)
			out[h] = -math.Log1p(-p)
			known = append(known, out[h])
		}
	}
	for h := range 24 {
		if out[h] < 0 {
			out[h] = median(known)
		}
	}
	return out
}

// lateOdds is how rarely a silence as long as a late site's comes by
// chance: once in a thousand days of the site's traffic. Asked of each
// silence alone (once in a thousand silences), a site of a few views an
// hour at night, which begins hundreds of silences a day, read as late
// about once a week, and told its receivers "no data" and "data again"
// each time (3 to 6 times in 5 weeks of a simulated small site's minutes;
// none now, TestSmallSiteIsNotLateAtNight).
const lateOdds = 1000.0

// bar is the hazard a silence must add up to for the site to be late:
// ln(lateOdds × the silences it begins a day, its steps with rows), so
// that it comes by chance once in lateOdds days whatever the site's
// size. A site of a view a minute all day (910 minutes with hits) asks
// ln(910,000) = 13.7, 14 minutes of silence, where one silence in a
// thousand asked 6.9, 7 (both under data_late_after's 10); one of 10
// views an hour all day (221 minutes) asks 12.3, 74 minutes, where it
// asked 41.
func (hz *hourHazards) bar(step time.Duration) float64 {
	perHour := float64(time.Hour / step)
	rows := 0.0
	for _, h := range hz {
		rows += -math.Expm1(-h) * perHour // the hour's share of steps with rows
	}
	return lateBar(rows)
}

// lateBar is the hazard a silence must add up to on a site whose data
// begins rowsPerDay silences a day (its steps with rows): once in
// lateOdds days by chance.
func lateBar(rowsPerDay float64) float64 { return math.Log(lateOdds * max(rowsPerDay, 1)) }

// quietUntil is when a silence of a sweep's minutes that began at from
// (a whole minute) has been long enough to be late: its minutes'
// hazards added up to the bar. ok is false if that comes after limit.
func (hz *hourHazards) quietUntil(from, limit time.Time) (time.Time, bool) {
	return hz.quietPast(hz.bar(time.Minute), from, time.Minute, limit)
}

// quietPast is when a silence of steps that began at from (a step
// boundary) has added up to bar (hourHazards.bar): a backtest's rows
// come every step, and it works the bar out once per site.
func (hz *hourHazards) quietPast(bar float64, from time.Time, step time.Duration, limit time.Time) (time.Time, bool) {
	at, sum := from, 0.0
	for sum < bar {
		if at.Add(step).After(limit) {
			return time.Time{}, false
		}
		sum += hz[at.UTC().Hour()]
		at = at.Add(step)
	}
	return at, true
}

// siteHoursEvery is how often a sweep reads again how often each site's
// minutes have hits; siteHoursOver, over how many days before.
const (
	siteHoursEvery = 30 * time.Minute
	siteHoursOver  = 7 * 24 * time.Hour
)

// siteHazards keeps each site's hour hazards, read from its minutes of
// the last week, for a while.
type siteHazards struct {
	counts Counter
	mu     sync.Mutex
	read   time.Time
	sites  map[string]*hourHazards
}

// of is each site's hazards as of now (nil for a site without hits in the
// last week), read again every siteHoursEvery.
func (c *siteHazards) of(ctx context.Context, now time.Time) (map[string]*hourHazards, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sites != nil && now.Sub(c.read) < siteHoursEvery && !now.Before(c.read) {
		return c.sites, nil
	}
	to := now.UTC().Truncate(time.Hour)
	rows, err := c.counts.SiteHours(ctx, to.Add(-siteHoursOver), to)
	if err != nil {
		return nil, err
	}
	c.sites, c.read = hazardsBySite(rows, to), now
	return c.sites, nil
}

// hazardsBySite turns each site's minutes with hits per hour into its
// hazards per minute: each hour from the site's first in rows to its
// last counts, those without a row as none of their minutes. The hours
// after its last are left out: a silence going on now is what the
// hazards judge, and must not teach them that the site is quiet.
func hazardsBySite(rows []traffic.SiteHour, to time.Time) map[string]*hourHazards {
	first, last := map[string]time.Time{}, map[string]time.Time{}
	minutes := map[string]map[time.Time]int{}
	for _, r := range rows {
		if f, ok := first[r.Site]; !ok || r.Hour.Before(f) {
			first[r.Site] = r.Hour
		}
		if l, ok := last[r.Site]; !ok || r.Hour.After(l) {
			last[r.Site] = r.Hour
		}
		if minutes[r.Site] == nil {
			minutes[r.Site] = map[time.Time]int{}
		}
		minutes[r.Site][r.Hour.UTC()] = r.Minutes
	}
	out := make(map[string]*hourHazards, len(first))
	for site, f := range first {
		var shares [24][]float64
		for h := f.UTC(); !h.After(last[site]) && h.Before(to); h = h.Add(time.Hour) {
			shares[h.Hour()] = append(shares[h.Hour()], float64(minutes[site][h])/60)
		}
		hz := hazardsOf(&shares)
		out[site] = &hz
	}
	return out
}
