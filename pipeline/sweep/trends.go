package sweep

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// Each page's slow trend (rules.PageTrend), which carries an unusual
// rule's weekly samples forward to now. It is read from the page's views
// per UTC day over the rules.TrendDays days ending three days before a
// window's day (rules.TrendFrom), so a sweep reads it once a day, for every
// page of the rules' sites at once: one WindowQuery with a start per day
// (a day's views are the difference of two starts' counts). Those days
// are sealed, so the query reads page_days alone, and pages under
// rules.TrendFloor views in them, which can have no trend, are not
// returned (WindowQuery.Once).

// trendDays is how many UTC days' trends are kept: today's and, for a
// sweep catching up over midnight, yesterday's. A sweep catching up
// over more days keeps each it needs until it is done.
const trendDays = 2

// trendsFor makes sure b.trends holds every page's trend for the days of
// need (rules.TrendFrom of the windows' ends), then forgets the oldest
// days no longer needed beyond trendDays. b.mu is held.
//
// The trends kept are of the sites the rules read when they were read:
// rules reloaded over other sites read them again. A read that fails is
// logged and the sweep goes on without trends (its normals as read, and
// without the pages' noise, read with them), trying again when normals
// are next read (the next half hour's): one slow query of 35 days must
// not keep every page from being judged.
func (b *baselines) trendsFor(ctx context.Context, set *ruleSet, need map[time.Time]bool) {
	if !slices.Equal(b.trendSites, set.sites) {
		b.trends, b.trendSites, b.noiseLater = nil, slices.Clone(set.sites), nil
	}
	for from := range need {
		if _, ok := b.trends[from]; ok {
			if b.noiseLater[from] && !b.readNoises(ctx, set, from, b.trends[from]) {
				delete(b.noiseLater, from)
			}
			continue
		}
		start := time.Now()
		of, err := b.readTrends(ctx, set, from)
		if err != nil {
			b.logger.Warn("page trends not read: normals as read until they are", "day", judgedDay(from), "err", err)
			b.told("trend", false, 0)
			continue
		}
		b.told("trend", true, len(of))
		if b.trends == nil {
			b.trends = map[time.Time]map[page]rules.Trend{}
		}
		b.trends[from] = of
		if b.readNoises(ctx, set, from, of) {
			if b.noiseLater == nil {
				b.noiseLater = map[time.Time]bool{}
			}
			b.noiseLater[from] = true
		}
		b.logger.Info("page trends read", "day", judgedDay(from), "pages", len(of), "took", time.Since(start).Round(time.Millisecond))
	}
	for len(b.trends) > trendDays {
		var oldest time.Time
		for from := range b.trends {
			if !need[from] && (oldest.IsZero() || from.Before(oldest)) {
				oldest = from
			}
		}
		if oldest.IsZero() {
			break // every day kept is needed now
		}
		delete(b.trends, oldest)
		delete(b.noiseLater, oldest)
	}
}

// judgedDay is the UTC day whose windows read their trends from the days
// from from on (rules.TrendFrom), for the log.
func judgedDay(from time.Time) string {
	return from.AddDate(0, 0, rules.TrendDays+2).Format(time.DateOnly)
}

// readTrends reads the trends of the pages of set's sites for the
// windows of judgedDay(from).
func (b *baselines) readTrends(ctx context.Context, set *ruleSet, from time.Time) (map[page]rules.Trend, error) {
	end := from.AddDate(0, 0, rules.TrendDays)
	q := traffic.WindowQuery{Measure: traffic.Views, Sites: set.sites, End: end,
		SealedBefore: b.seals.daysBefore(), Floor: rules.TrendFloor - 1, Once: true}
	for i := range rules.TrendDays {
		q.Starts = append(q.Starts, from.AddDate(0, 0, i))
	}
	counts, err := b.counts.WindowCounts(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("page trends from %s: %w", from.Format(time.DateOnly), err)
	}
	out := make(map[page]rules.Trend, len(counts))
	for _, pc := range counts {
		start, ok := b.starts[pc.Site]
		if !ok {
			continue
		}
		c := pc.Counts
		days := rules.DailyViews(from, start, func(day time.Time) float64 {
			i := int(day.Sub(from) / (24 * time.Hour))
			next := uint64(0)
			if i+1 < len(c) {
				next = c[i+1]
			}
			return float64(c[i] - next)
		})
		if tr := rules.PageTrend(days); tr.OK {
			out[page{pc.Site, pc.Path}] = tr
		}
	}
	return out, nil
}

// readNoises adds to of the noise of the pages of set's sites for the
// windows of judgedDay(from) (rules.PageNoise), computed in ClickHouse
// over their sealed hours: one query per number of weeks the sites'
// data covers. Hours not yet sealed (a backlog being sealed) are not
// read, and later reports that: the next sweeps read them once they
// are. A query that fails is logged and not asked again that day: the
// pages keep the prior every page starts from, and the trends read
// stand. Asked again at every sweep, a query too big for ClickHouse's
// memory failed each time, and took the trends with it
// (BenchmarkSweepShipped at 100M hits).
func (b *baselines) readNoises(ctx context.Context, set *ruleSet, from time.Time, of map[page]rules.Trend) (later bool) {
	day := from.AddDate(0, 0, rules.TrendDays+2)
	// Every site's hours end where the trend's days end: sealed for one,
	// sealed for all.
	to := from.AddDate(0, 0, rules.TrendDays)
	if sealed := b.seals.hoursBefore().UTC().Truncate(24 * time.Hour); sealed.Before(to) {
		// Sealed a day and the lag tolerance after they end, they are by
		// every day's first sweep, but for a backlog.
		b.logger.Info("page noise not read yet: its hours are not sealed", "day", judgedDay(from), "sealed_before", sealed.Format(time.DateOnly), "needed", to.Format(time.DateOnly))
		return true
	}
	sites := set.sites
	if sites == nil {
		// Rules over every site (the shipped file): every site with data.
		sites = slices.Sorted(maps.Keys(b.starts))
	}
	byWeeks := map[int][]string{} // the weeks of hours each site's data covers
	for _, site := range sites {
		if start, ok := b.starts[site]; ok {
			if _, weeks := rules.NoiseHours(day, start); weeks > 0 {
				byWeeks[weeks] = append(byWeeks[weeks], site)
			}
		}
	}
	ok, pages := true, 0
	defer func() { b.told("noise", ok, pages) }()
	for _, weeks := range slices.Sorted(maps.Keys(byWeeks)) {
		noises, err := b.counts.PageNoises(ctx, traffic.NoiseQuery{Sites: byWeeks[weeks], From: to.AddDate(0, 0, -7*weeks), Weeks: weeks, Every: rules.NoiseEvery,
			MinMedian: rules.NoiseMinMedian, MinHours: rules.NoiseMinHours, TrimPercent: rules.NoiseTrimPercent, Bias: rules.NoiseBias(weeks)})
		if err != nil {
			b.logger.Warn("page noise not read: the prior stands in for the day", "day", judgedDay(from), "weeks", weeks, "sites", len(byWeeks[weeks]), "err", err)
			ok = false
			continue
		}
		pages += len(noises)
		for _, n := range noises {
			k := page{n.Site, n.Path}
			tr := of[k]
			tr.Noise, tr.NoiseOK = n.Noise, true
			of[k] = tr
		}
	}
	return false
}

// told tells b.reads of a read, if anyone listens.
func (b *baselines) told(read string, ok bool, pages int) {
	if b.reads != nil {
		b.reads.normalRead(read, ok, pages)
	}
}

// trendOf is page k's trend for windows ending at end, if r follows one
// (read by trendsFor). b.mu is held.
func (b *baselines) trendOf(r *rules.Rule, k normalKey, end time.Time) rules.Trend {
	if !rules.FollowsTrend(r) {
		return rules.Trend{}
	}
	return b.trends[rules.TrendFrom(end)][page{k.site, k.path}]
}
