package sweep

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// replay is a backtest over src's minutes: what a sweep every minute would
// have fired since a time, had every hit arrived on time. Counts are
// judged at the end of every minute with a row (and, for rolling windows,
// when such a minute leaves the window); an open episode and a rule that
// looks down are also judged at every whole hour, when the baseline
// moves. All-time windows start from base, or with a nil base (a counts
// file) from the first minute of src. Spike and new_page rules read the minutes before since that
// their baselines reach back to; a site's data begins at its first row,
// and windows before that are unknown, as in a sweep. A site whose rows
// stop for a while is late, as a sweep would have found it (siteRows):
// its drops are held. keep, unless nil, says which rows are judged; the
// others still say when their site's data flowed. base holds each
// all-time state key's count before since.
func replay(ctx context.Context, src MinuteSource, keep func(site, path string, minute time.Time, hits uint64) bool, set *ruleSet, base map[string]uint64, since, now time.Time, lateAfter time.Duration, logger *slog.Logger) ([]crossing.Crossing, error) {
	scanFrom := since
	for _, r := range set.rules {
		switch r.Window.Kind {
		case rules.Rolling:
			scanFrom = minTime(scanFrom, since.Add(-r.Window.Rolling))
			for _, sp := range r.BaselineSpans(since, time.Time{}) {
				scanFrom = minTime(scanFrom, sp.From)
			}
		case rules.Calendar:
			from, _ := r.Window.Bounds(since)
			scanFrom = minTime(scanFrom, from)
		case rules.AllTime:
			if base == nil {
				scanFrom = time.Time{}
			}
		}
	}
	rows := newSiteRows(src, keep)
	for _, r := range set.rules {
		if r.Count == rules.CountVisitors {
			logger.Warn("a backtest replays per-minute views; this rule counts visitors, which are distinct over a whole window, and is left out", "rule", r.Name)
		}
	}
	all, _, err := scanSeries(ctx, rows, set, traffic.MinuteScan{Sites: set.sites, From: scanFrom, To: now.Truncate(time.Minute).Add(time.Minute)},
		func(r *rules.Rule) bool { return r.Count != rules.CountVisitors })
	if err != nil {
		return nil, err
	}
	rows.settle(now, lateAfter)
	var out []crossing.Crossing
	for _, k := range slices.Sorted(maps.Keys(all)) {
		sr := all[k]
		r := set.rules[sr.rule]
		site := rows.site(sr.site)
		dataStart := site.start
		if dataStart.Before(scanFrom) {
			dataStart = scanFrom
		}
		allFrom := since // the base holds what came before
		if base == nil {
			allFrom = time.Time{}
		}
		out = append(out, replaySeries(k, sr, r, base[k], since, allFrom, now, dataStart, site, logger)...)
	}
	out = append(out, noDataEpisodes(set, rows, since, now)...)
	slices.SortStableFunc(out, func(a, b crossing.Crossing) int { return a.CrossedAt.Compare(b.CrossedAt) })
	return out, nil
}

// replaySeries steps one state key through its moments.
func replaySeries(k string, sr *series, r *rules.Rule, base uint64, since, allFrom, now, dataStart time.Time, site *siteData, logger *slog.Logger) []crossing.Crossing {
	mins := slices.SortedFunc(maps.Keys(sr.minutes), func(a, b time.Time) int { return a.Compare(b) })
	type moment struct {
		t    time.Time
		hour bool // only a whole hour: judged if an episode is open or the rule looks down
	}
	var moments []moment
	for _, m := range mins {
		if !m.Before(since) {
			moments = append(moments, moment{t: m})
		}
		if r.Window.Kind == rules.Rolling && !m.Add(r.Window.Rolling).Before(since) {
			moments = append(moments, moment{t: m.Add(r.Window.Rolling)})
		}
	}
	episodic := r.HasNormal()
	if episodic && len(mins) > 0 {
		for h := since.Truncate(time.Hour).Add(time.Hour); !h.After(now); h = h.Add(time.Hour) {
			moments = append(moments, moment{t: h, hour: true})
		}
	}
	slices.SortFunc(moments, func(a, b moment) int {
		if c := a.t.Compare(b.t); c != 0 {
			return c
		}
		return cmpBool(a.hour, b.hour)
	})
	moments = slices.CompactFunc(moments, func(a, b moment) bool { return a.t.Equal(b.t) })
	upTo := sr.sums(mins).before
	// A baseline moves with the hour (and, for same_time, the half hour
	// it rounds at), so it is computed once per half hour.
	expected := map[time.Time]rules.Expected{}
	expect := func(to time.Time) rules.Expected {
		key := to.Truncate(30 * time.Minute)
		if e, ok := expected[key]; ok {
			return e
		}
		spans := r.BaselineSpans(to, dataStart)
		counts := make([]uint64, len(spans))
		for i, sp := range spans {
			counts[i] = upTo(sp.To) - upTo(sp.From)
		}
		e := r.Normal(spans, counts)
		expected[key] = e
		return e
	}
	lookDown := r.Detector().LooksDown()
	reach := r.Detector().Reach()
	if site.step > reach.Short {
		// Rows further apart than the burst window (counts per 30
		// minutes, say) cannot show a burst of it: each row would land
		// in one minute as a burst of its own.
		reach.Short = 0
	}
	var (
		st  rules.State
		out []crossing.Crossing
	)
	for _, m := range moments {
		at := m.t.Add(time.Minute - time.Second)
		if at.After(now) {
			break
		}
		if m.hour && st.Open == nil && !lookDown {
			continue
		}
		pt := pointAt(sr.rule, r, at, now)
		lo := pt.from
		if r.Window.Kind == rules.AllTime {
			lo = allFrom
		}
		o := observation{key: k, pt: pt, site: sr.site, path: sr.path, count: base + upTo(pt.to) - upTo(lo)}
		if episodic {
			o.exp = expect(pt.to)
			if reach.Short > 0 {
				o.short = upTo(pt.to) - upTo(pt.to.Add(-reach.Short))
			}
			o.late = site.late(pt.to)
			if reach.Long > 0 {
				o.long = upTo(pt.to) - upTo(pt.to.Add(-reach.Long))
				o.longLate = site.lateWithin(pt.to.Add(-reach.Long), pt.to)
			}
		}
		var fire []rules.Firing
		st, fire = r.Judge(st, o.ruleObservation())
		for _, f := range fire {
			out = append(out, crossingOf(logger, r, o, f))
		}
	}
	return out
}

// noDataEpisodes are the "no data" messages a sweep every minute would
// have sent over the replay, by the rules that hold drops while a site's
// data is late (freshness.go): one when a site's rows stop for longer
// than siteRows.late allows, and its resolve when they come again, from
// the first sweep that sees the row (a minute after the row's minute).
// A gap that began before since and is still late at since is told at
// since, as by a sweeper started then.
func noDataEpisodes(set *ruleSet, f *siteRows, since, now time.Time) []crossing.Crossing {
	var out []crossing.Crossing
	for _, r := range set.rules {
		if !saysNoData(r) {
			continue
		}
		for _, site := range slices.Sorted(maps.Keys(f.sites)) {
			if r.Site != "" && r.Site != site {
				continue
			}
			episode := uint64(0)
			d := f.sites[site]
			ms := d.minutes
			for i, m := range ms {
				if d.lateAt[i].IsZero() {
					continue
				}
				// The first sweep after it finds the site late.
				lateAt := maxTime(d.lateAt[i].Truncate(time.Minute).Add(time.Minute), since)
				back := now.Add(time.Minute) // none: still late at the end
				if i+1 < len(ms) {
					back = ms[i+1].Add(time.Minute)
				}
				if !lateAt.Before(back) || lateAt.After(now) {
					continue
				}
				// Since: the newest minute, as DataEnds says in a sweep.
				episode++
				out = append(out, noDataCrossing(r, site, episode, rules.EventFire, m, lateAt))
				if !back.After(now) {
					out = append(out, noDataCrossing(r, site, episode, rules.EventResolve, m, back))
				}
			}
		}
	}
	return out
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
