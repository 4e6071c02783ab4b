package sweep

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// DryRun is what a sweep now would hand on, recording nothing: no seal,
// no claim, no job, no history, no progress. Crossings an earlier sweep
// claimed but did not hand on are included.
func (s *Sweeper) DryRun(ctx context.Context) ([]crossing.Crossing, error) {
	if err := s.startSync(ctx); err != nil {
		return nil, err
	}
	set, now := s.rules(), s.now()
	current := s.currentPoints(set, now)
	obs, _, err := s.count(ctx, set, current, false)
	if err != nil {
		return nil, err
	}
	verdicts, err := s.judge(ctx, set, obs, current)
	if err != nil {
		return nil, err
	}
	var out []crossing.Crossing
	for _, v := range verdicts {
		out = append(out, v.pending...)
		out = append(out, v.fired...)
	}
	return out, nil
}

// Backtest replays the stored per-minute counts since a time through the
// rules, each state starting afresh, and returns what would have fired,
// in time order. It reads ClickHouse only and writes nothing. Counts are
// judged at the end of every minute with hits (and, for rolling windows,
// when such a minute leaves the window), which is what a sweep every
// minute would have seen had every hit arrived on time.
func (s *Sweeper) Backtest(ctx context.Context, since time.Time) ([]crossing.Crossing, error) {
	set, now := s.rules(), s.now()
	since = since.Truncate(time.Minute)
	// Each rule's count at since is its base; minutes from since on are
	// replayed. Rolling windows need the minutes before since that are
	// still in the window, calendar windows the start of theirs.
	scanFrom := since
	basePts := map[int]point{}
	for i, r := range set.rules {
		switch r.Window.Kind {
		case rules.Rolling:
			scanFrom = minTime(scanFrom, since.Add(-r.Window.Rolling))
		case rules.Calendar:
			from, _ := r.Window.Bounds(since)
			scanFrom = minTime(scanFrom, from)
		case rules.AllTime:
			basePts[i] = point{rule: i, at: since, to: since}
		}
	}
	base := map[string]observation{}
	if len(basePts) > 0 {
		obs, _, err := s.count(ctx, set, slices.Collect(maps.Values(basePts)), true)
		if err != nil {
			return nil, err
		}
		for k, list := range obs {
			base[k] = list[len(list)-1]
		}
	}

	all, _, err := s.scanSeries(ctx, set, traffic.MinuteScan{Sites: set.sites, From: scanFrom, To: now.Truncate(time.Minute).Add(time.Minute)},
		func(*rules.Rule) bool { return true })
	if err != nil {
		return nil, err
	}

	var out []crossing.Crossing
	for k, sr := range all {
		r := set.rules[sr.rule]
		mins := slices.SortedFunc(maps.Keys(sr.minutes), func(a, b time.Time) int { return a.Compare(b) })
		var moments []time.Time
		for _, m := range mins {
			if !m.Before(since) {
				moments = append(moments, m)
			}
			if r.Window.Kind == rules.Rolling && !m.Add(r.Window.Rolling).Before(since) {
				moments = append(moments, m.Add(r.Window.Rolling))
			}
		}
		slices.SortFunc(moments, func(a, b time.Time) int { return a.Compare(b) })
		moments = slices.CompactFunc(moments, func(a, b time.Time) bool { return a.Equal(b) })
		// prefix[i] is the hits of mins[:i], so any window is two lookups.
		prefix := make([]uint64, len(mins)+1)
		for i, m := range mins {
			prefix[i+1] = prefix[i] + sr.minutes[m]
		}
		upTo := func(t time.Time) uint64 { // hits in minutes before t
			i, _ := slices.BinarySearchFunc(mins, t, func(a, b time.Time) int { return a.Compare(b) })
			return prefix[i]
		}
		var st rules.State
		for _, t := range moments {
			at := t.Add(time.Minute - time.Second)
			if at.After(now) {
				break
			}
			pt := pointAt(sr.rule, r, at, now)
			lo := pt.from
			if r.Window.Kind == rules.AllTime {
				lo = since // the base holds what came before
			}
			n := base[k].count + upTo(pt.to) - upTo(lo)
			var fire []rules.Firing
			st, fire = r.Step(st, n, at)
			for _, f := range fire {
				out = append(out, s.crossingOf(r, observation{key: k, pt: pt, site: sr.site, path: sr.path, count: n}, f))
			}
		}
	}
	slices.SortStableFunc(out, func(a, b crossing.Crossing) int { return a.CrossedAt.Compare(b.CrossedAt) })
	return out, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
