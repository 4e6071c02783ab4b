package sweep

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/domain/clocks"
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
// file) from the first minute of src. A rule whose states remember (an
// unusual rule's bursts and launches) is judged from as long before
// since (warmFrom), its messages before since left out. Rules with a
// normal read the minutes before that their baselines reach back to;
// a site's data begins at its first row,
// and windows before that are unknown, as in a sweep. A site whose rows
// stop for a while is late, as a sweep would have found it (siteRows):
// its drops are held. keep, unless nil, says which rows are judged; the
// others still say when their site's data flowed. base holds each
// all-time state key's count before since.
func replay(ctx context.Context, src MinuteSource, keep func(site, path string, minute time.Time, hits uint64) bool, set *ruleSet, base map[string]uint64, since, now time.Time, lateAfter time.Duration, logger *slog.Logger) ([]crossing.Crossing, error) {
	// Each rule is judged from what its states remember before since,
	// its messages there left out: a sweeper running all along knew it.
	scanFrom := scanStart(set, func(r *rules.Rule) time.Time { return warmFrom(r, since) }, since, now, base)
	for _, r := range set.rules {
		if rules.FollowsTrend(r) {
			// The days its trend is read from: scanned, but not what a
			// site's lateness is learnt from (settle, below).
			scanFrom = minTime(scanFrom, rules.TrendFrom(warmFrom(r, since)))
		}
	}
	rows := newSiteRows(src, keep)
	if rows.clocksReach = rules.ClocksReach(set.rules); rows.clocksReach > 0 {
		// A change of clocks within the normals' reach is weighed from
		// the week before it, as a sweep reads it (clocks.Learner).
		scanFrom = scanFrom.Add(-clocks.EvidenceBefore)
	}
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
	// When a site's data was late is learnt from the rows the days asked
	// for read without a warm-up: the weeks before it would change it
	// for every rule of the site, as they are not what a sweep learns it
	// from either (the week before: sitehours.go).
	rows.settle(now, lateAfter, scanStart(set, func(*rules.Rule) time.Time { return since }, since, now, base))
	allFrom := since // the base holds what came before
	if base == nil {
		allFrom = time.Time{}
	}
	// Each state key is replayed on its own, but the pages of a site
	// that are ever in their launch under a rule that judges them
	// against its site's launches: those are stepped again together,
	// minute by minute, as a sweep every minute would judge them
	// (replayLaunches). A page never in its launch neither reads the
	// launches nor adds to them, and its replay alone is the same; it
	// keeps what it knows in cache, which stepping pages in turn loses.
	byKey := map[string][]crossing.Crossing{}
	groups := map[launchGroup][]*seriesRun{}
	var groupOrder []launchGroup
	for _, k := range slices.Sorted(maps.Keys(all)) {
		sr := all[k]
		r := set.rules[sr.rule]
		site := rows.site(sr.site)
		dataStart := site.start
		if dataStart.Before(scanFrom) {
			dataStart = scanFrom
		}
		run := newSeriesRun(k, sr, r, base[k], warmFrom(r, since), allFrom, now, dataStart, site, logger)
		run.replay()
		if !run.launched {
			byKey[k] = run.out
			continue
		}
		run.reset()
		g := launchGroup{sr.rule, sr.site}
		if _, ok := groups[g]; !ok {
			groupOrder = append(groupOrder, g)
		}
		groups[g] = append(groups[g], run)
	}
	for _, g := range groupOrder {
		replayLaunches(groups[g])
		for _, run := range groups[g] {
			byKey[run.key] = run.out
		}
	}
	var out []crossing.Crossing
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		for _, x := range byKey[k] {
			if !x.CrossedAt.Before(since) { // not the warm-up's
				out = append(out, x)
			}
		}
	}
	out = append(out, noDataEpisodes(set, rows, since, now)...)
	slices.SortStableFunc(out, func(a, b crossing.Crossing) int { return a.CrossedAt.Compare(b.CrossedAt) })
	return out, nil
}

// scanStart is the first minute a replay reads: each rule's window and
// the baselines of its windows from from(r) on, a calendar window's
// start at since, and for all-time windows without a base everything.
func scanStart(set *ruleSet, from func(*rules.Rule) time.Time, since, now time.Time, base map[string]uint64) time.Time {
	start := since
	for _, r := range set.rules {
		switch r.Window.Kind {
		case rules.Rolling:
			f := from(r)
			own := f.Add(-r.Window.Rolling)
			for _, sp := range r.BaselineSpans(f, time.Time{}) {
				own = minTime(own, sp.From)
			}
			if rules.LearnsClocks(r) {
				own = own.Add(-time.Hour) // a learned clock's day back may be 25 hours
			}
			start = minTime(start, own)
			if q, ok := quietReach(r, pointAt(0, r, f, now)); ok {
				start = minTime(start, q) // a page's weeks before its window, as a sweep reads them
			}
		case rules.Calendar:
			f, _ := r.Window.Bounds(since)
			start = minTime(start, f)
		case rules.AllTime:
			if base == nil {
				start = time.Time{}
			}
		}
	}
	return start
}

// warmFrom is when a replay reporting from since begins judging r: as
// far before since as its states remember (rules.Remembers), so that
// since is judged as by a sweeper that ran all along. A site's data that
// begins later begins the judging later too, as it did for the sweeper.
func warmFrom(r *rules.Rule, since time.Time) time.Time {
	return since.Add(-rules.Remembers(r))
}

// launchGroup is the pages of one site under one rule.
type launchGroup struct {
	rule int
	site string
}

// replayLaunches steps the pages of one site under one rule together,
// in time order, each judged with the site's launches as they stood
// before the minute: a sweep reads them from its pages' states before it
// judges any.
func replayLaunches(runs []*seriesRun) {
	type event struct {
		at     int64 // unix seconds: sorting 10⁶ of these is most of the cost
		run, m int32
	}
	n := 0
	for _, run := range runs {
		n += len(run.moments)
	}
	events := make([]event, 0, n)
	for i, run := range runs {
		for j, m := range run.moments {
			events = append(events, event{m.t.Unix(), int32(i), int32(j)})
		}
	}
	// Within a minute, in key order (runs are): a sweep's order there
	// does not matter, since every page of it reads the launches as they
	// stood before it.
	slices.SortFunc(events, func(a, b event) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		return cmp.Compare(a.run, b.run)
	})
	launched := map[string]rules.Burst{}
	var (
		launches rules.Launches
		dirty    bool
	)
	for i, e := range events {
		if i == 0 || e.at != events[i-1].at {
			at := time.Unix(e.at, 0).Add(time.Minute - time.Second)
			if exp := launches.Expires(); dirty || (!exp.IsZero() && !at.Before(exp)) {
				all := make([]rules.Launch, 0, len(launched))
				for k, b := range launched {
					all = append(all, rules.Launch{Page: k, Burst: b})
				}
				slices.SortFunc(all, func(a, b rules.Launch) int { return strings.Compare(a.Page, b.Page) })
				launches, dirty = rules.NewLaunches(all, at), false
			}
		}
		run := runs[e.run]
		run.launches = launches
		run.step(run.moments[e.m])
		markLaunch(&run.st, run.sr.site)
		b, ok := rules.LaunchOf(run.st)
		if old, had := launched[run.key]; ok && (!had || b != old) {
			launched[run.key], dirty = b, true
		} else if !ok && had {
			// Out of its 16 remembered bursts: the sweep's states no
			// longer show it either.
			delete(launched, run.key)
			dirty = true
		}
	}
}

// seriesRun is one state key's replay: its moments, and its state as it
// steps through them.
type seriesRun struct {
	key       string
	sr        *series
	r         *rules.Rule
	base      uint64
	allFrom   time.Time
	now       time.Time
	dataStart time.Time
	site      *siteData
	logger    *slog.Logger
	moments   []moment
	upTo      func(time.Time) uint64
	expected  map[normalSlot]normalAt
	reach     rules.Reach
	lookDown  bool
	st        rules.State
	launches  rules.Launches // its site's (rules.ReadsLaunches)
	launched  bool           // it was in its launch at some moment (rules.InLaunch)
	out       []crossing.Crossing
	// trend is the page's trend for the UTC day trendDay, read once a day.
	trendDay time.Time
	trend    rules.Trend
}

// trendAt is the page's trend and noise for windows ending at end
// (rules.PageTrend, rules.PageNoise), from its views per UTC day and
// hour as a sweep reads them.
func (run *seriesRun) trendAt(end time.Time) rules.Trend {
	if !rules.FollowsTrend(run.r) {
		return rules.Trend{}
	}
	from := rules.TrendFrom(end)
	if from.Equal(run.trendDay) {
		return run.trend
	}
	days := rules.DailyViews(from, run.dataStart, func(day time.Time) float64 {
		return float64(run.upTo(day.AddDate(0, 0, 1)) - run.upTo(day))
	})
	tr := rules.PageTrend(days)
	tr.Noise, tr.NoiseOK = rules.ReadNoise(end, run.dataStart, func(h time.Time) float64 {
		return float64(run.upTo(h.Add(time.Hour)) - run.upTo(h))
	})
	run.trendDay, run.trend = from, tr
	return run.trend
}

// moment is a time a replayed state key is judged at.
type moment struct {
	t    time.Time
	hour bool // only a whole hour: judged if an episode is open or the rule looks down
}

// newSeriesRun is the replay of state key k judged from from on.
func newSeriesRun(k string, sr *series, r *rules.Rule, base uint64, from, allFrom, now, dataStart time.Time, site *siteData, logger *slog.Logger) *seriesRun {
	mins := slices.SortedFunc(maps.Keys(sr.minutes), func(a, b time.Time) int { return a.Compare(b) })
	var moments []moment
	for _, m := range mins {
		if !m.Before(from) {
			moments = append(moments, moment{t: m})
		}
		if r.Window.Kind == rules.Rolling && !m.Add(r.Window.Rolling).Before(from) {
			moments = append(moments, moment{t: m.Add(r.Window.Rolling)})
		}
	}
	if r.HasNormal() && len(mins) > 0 {
		// Not before its site's data: a warm-up reaching back past it
		// would step weeks of hours that know nothing.
		for h := maxTime(from, dataStart).Truncate(time.Hour).Add(time.Hour); !h.After(now); h = h.Add(time.Hour) {
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
	run := &seriesRun{key: k, sr: sr, r: r, base: base, allFrom: allFrom, now: now, dataStart: dataStart, site: site, logger: logger,
		moments: moments, upTo: sr.sums(mins).before, expected: map[normalSlot]normalAt{},
		reach: r.Detector().Reach(), lookDown: r.Detector().LooksDown()}
	if site.step > run.reach.Short {
		// Rows further apart than the burst window (counts per 30
		// minutes, say) cannot show a burst of it: each row would land
		// in one minute as a burst of its own.
		run.reach.Short = 0
	}
	return run
}

// reset forgets what the moments did, to step them again; the normals
// stay, which the state does not change.
func (run *seriesRun) reset() {
	run.st, run.out, run.launches = rules.State{}, nil, rules.Launches{}
}

// replay steps the state key through all its moments.
func (run *seriesRun) replay() {
	for _, m := range run.moments {
		run.step(m)
	}
}

// normalAt is a window end's normal, the clocks it was read on (""
// UTC's), and where the weeks before it begin (quietReach) for a rule
// looking down or judging launches.
type normalAt struct {
	exp     rules.Expected
	clock   string
	reach   time.Time
	reachOK bool
}

// normalSlot is what a window's normal is the same for: its half hour,
// and whether it ends on the hour. A window ending at 20:00 is one
// hour's; one ending at 20:01 to 20:29 touches two and is judged
// against both (rules.Spans), as a sweep judges it: kept under the half
// hour alone, the first a replay met stood for the others.
type normalSlot struct {
	half   time.Time
	onHour bool
}

// expect is the normal for the window of pt: a baseline moves with the
// hour (and, for same_time, the half hour it rounds at), so it is
// computed once per half hour (normalSlot), with quietReach's start from
// the same spans (before a site's data start too, as a sweep reads them).
func (run *seriesRun) expect(pt point) normalAt {
	key := normalSlot{pt.to.Truncate(30 * time.Minute), pt.to.Equal(pt.to.Truncate(time.Hour))}
	if e, ok := run.expected[key]; ok {
		return e
	}
	var clock *time.Location
	if rules.LearnsClocks(run.r) {
		clock = run.site.views.clockAt(pt.to)
	}
	all := rules.SpansOn(run.r, pt.to, time.Time{}, clock)
	var n normalAt
	if clock != nil {
		n.clock = clock.String()
	}
	if run.lookDown || rules.ReadsLaunches(run.r) {
		reach := all
		if clock != nil {
			// The weeks before a window are read as a sweep reads them
			// (quietReach), on the rule's own zone: a day, not a clock.
			reach = run.r.BaselineSpans(pt.to, time.Time{})
		}
		n.reach, n.reachOK = reachOf(reach, pt.from)
	}
	spans := slices.DeleteFunc(all, func(sp rules.Interval) bool { return sp.From.Before(run.dataStart) })
	counts := make([]uint64, len(spans))
	for i, sp := range spans {
		counts[i] = run.upTo(sp.To) - run.upTo(sp.From)
	}
	n.exp = run.r.Normal(spans, counts, run.trendAt(pt.to))
	run.expected[key] = n
	return n
}

// step judges the state key at one moment.
func (run *seriesRun) step(m moment) {
	r, now := run.r, run.now
	at := m.t.Add(time.Minute - time.Second)
	if at.After(now) {
		return
	}
	if m.hour && run.st.Open == nil && !run.lookDown {
		return
	}
	pt := pointAt(run.sr.rule, r, at, now)
	lo := pt.from
	if r.Window.Kind == rules.AllTime {
		lo = run.allFrom
	}
	upTo := run.upTo
	o := observation{key: run.key, pt: pt, site: run.sr.site, path: run.sr.path, count: run.base + upTo(pt.to) - upTo(lo), launches: run.launches}
	if r.HasNormal() {
		n := run.expect(pt)
		o.exp, o.clock = n.exp, n.clock
		if n.reachOK && rules.ReadsLaunches(r) {
			o.before, o.beforeOK = upTo(pt.from)-upTo(n.reach), true
		}
		if run.reach.Short > 0 {
			o.short = upTo(pt.to) - upTo(pt.to.Add(-run.reach.Short))
		}
		o.late = run.site.lateWithin(pt.from, pt.to) // as a sweep: freshness.go
		if run.reach.Long > 0 {
			o.long = upTo(pt.to) - upTo(pt.to.Add(-run.reach.Long))
			o.longLate = run.site.lateWithin(pt.to.Add(-run.reach.Long), pt.to)
		}
	}
	var fire []rules.Firing
	ro := o.ruleObservation()
	if !run.launched && rules.InLaunch(r, run.st, ro) {
		run.launched = true
	}
	run.st, fire = r.Judge(run.st, ro)
	for _, f := range fire {
		run.out = append(run.out, crossingOf(run.logger, r, o, f))
	}
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
