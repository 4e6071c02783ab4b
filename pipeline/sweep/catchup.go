package sweep

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// catchUpFrom is where catching up starts: the last sweep's time, but no
// further back than catch_up. Zero: nothing to catch up (first sweep ever,
// or catching up is off).
func (s *Sweeper) catchUpFrom(last, now time.Time) time.Time {
	if last.IsZero() || s.cfg.CatchUp == 0 || !last.Before(now) {
		return time.Time{}
	}
	if limit := now.Add(-s.cfg.CatchUp); last.Before(limit) {
		s.logger.Warn("sweeps stopped for longer than catch_up; older crossings are not evaluated", "last_sweep", last, "catch_up", s.cfg.CatchUp)
		return limit
	}
	return last
}

// calendarCatchUp returns a closing point for every calendar window that
// closed (plus the lag tolerance) since the last sweep: judged on its full
// count at its end, so a day that crossed while no sweeper ran, or in its
// last seconds, still fires once, with that day's key.
func (s *Sweeper) calendarCatchUp(set *ruleSet, last, now time.Time) []point {
	from := s.catchUpFrom(last, now)
	if from.IsZero() {
		return nil
	}
	var pts []point
	for i, r := range set.rules {
		if r.Window.Kind != rules.Calendar {
			continue
		}
		at, end := s.evalTime(r, from), s.evalTime(r, now)
		for {
			_, to := r.Window.Bounds(at)
			if to.After(end) {
				break
			}
			pts = append(pts, pointAt(i, r, to.Add(-time.Second), now))
			at = to
		}
	}
	return pts
}

// rollingCatchUp adds, for rolling rules, the counts at every minute that
// passed since the last sweep when sweeps stopped for longer than a
// minute: a page that crossed and fell back while no sweeper ran still
// fires once, and one that fell back re-arms. Counts only change where a
// minute with hits enters or leaves the window, so only those moments are
// judged. It returns the rows read.
func (s *Sweeper) rollingCatchUp(ctx context.Context, set *ruleSet, last, now time.Time, obs map[string][]observation) (int, error) {
	from := s.catchUpFrom(last, now)
	if from.IsZero() || now.Sub(from) < 90*time.Second {
		return 0, nil // sweeps are frequent: the current point covers it
	}
	var longest time.Duration
	sites := map[string]bool{}
	for _, r := range set.rules {
		if r.Window.Kind == rules.Rolling {
			longest = max(longest, r.Window.Rolling, r.Detector().Reach().Long)
			sites[siteOf(r)] = true
		}
	}
	if longest == 0 {
		return 0, nil
	}
	q := traffic.MinuteScan{From: from.Add(-longest).Truncate(time.Minute), To: now.Truncate(time.Minute)}
	for site := range sites {
		q.Sites = append(q.Sites, site)
	}
	if sites[""] {
		q.Sites = nil // a rule over every site
	}
	slices.Sort(q.Sites)

	// Visitors are distinct over a whole window and cannot be added up
	// from minutes: rules counting them are judged at sweep time only.
	all, rows, err := scanSeries(ctx, s.counts, set, q, func(r *rules.Rule) bool {
		return r.Window.Kind == rules.Rolling && r.Count != rules.CountVisitors
	})
	if err != nil {
		return rows, err
	}
	for k, sr := range all {
		r := set.rules[sr.rule]
		d := r.Window.Rolling
		// A window's count changes when a minute with hits enters it (at
		// that minute) or leaves it (d later).
		var moments []time.Time
		for m := range sr.minutes {
			for _, t := range []time.Time{m, m.Add(d)} {
				if t.After(from) && t.Before(now.Truncate(time.Minute)) {
					moments = append(moments, t)
				}
			}
		}
		slices.SortFunc(moments, func(a, b time.Time) int { return a.Compare(b) })
		moments = slices.CompactFunc(moments, func(a, b time.Time) bool { return a.Equal(b) })
		mins := slices.SortedFunc(maps.Keys(sr.minutes), func(a, b time.Time) int { return a.Compare(b) })
		// A burst's minutes and a drop's hours (Reach), as the count
		// query sums them: judged on the hour alone, a burst of minutes
		// while no sweeper ran was heard only if its hour was.
		reach := r.Detector().Reach()
		// The weeks before each moment's window, for a rule judging
		// launches (observation.before): the current point's, less the
		// minutes between the moment's window and its. Both reach back to
		// the same UTC midnight but for a catch-up across one, whose
		// first day, 5 weeks back, is then not taken off: a page is new
		// alike (it had no views then), and one that was not could only
		// differ by that day's views.
		cur := slices.IndexFunc(obs[k], func(o observation) bool { return o.beforeOK })
		var sums minuteSums
		if reach.Short > 0 || reach.Long > 0 || cur >= 0 {
			sums = sr.sums(mins)
		}
		upTo := func(t time.Time) uint64 { return sums.before(t.Add(time.Minute)) } // minutes at or before t
		// Slide the window (t-d, t] over the sorted minutes.
		var n uint64
		in, out := 0, 0
		for _, t := range moments {
			for in < len(mins) && !mins[in].After(t) {
				n += sr.minutes[mins[in]]
				in++
			}
			for out < in && !mins[out].After(t.Add(-d)) {
				n -= sr.minutes[mins[out]]
				out++
			}
			// Judged at the end of minute t, as a sweep then would have.
			at := t.Add(time.Minute - time.Second)
			o := observation{key: k, pt: pointAt(sr.rule, r, at, now), site: sr.site, path: sr.path, count: n}
			if reach.Short > 0 {
				o.short = upTo(t) - upTo(t.Add(-reach.Short))
			}
			if reach.Long > 0 {
				o.long = upTo(t) - upTo(t.Add(-reach.Long))
			}
			if cur >= 0 {
				c := obs[k][cur]
				between := sums.before(c.pt.from) - sums.before(o.pt.from)
				o.before, o.beforeOK = c.before-min(between, c.before), true
			}
			obs[k] = append(obs[k], o)
		}
		slices.SortStableFunc(obs[k], func(a, b observation) int { return a.pt.at.Compare(b.pt.at) })
	}
	return rows, nil
}

// series is one state key's minutes with hits: a page's for a per-page
// rule, all matched pages' added up for a sum rule (path empty).
type series struct {
	rule       int
	site, path string
	minutes    map[time.Time]uint64
}

// minuteSums is a series' hits before any time in two lookups: sums[i]
// is the hits of the minutes before at[i]. Times are kept as Unix
// nanoseconds: a backtest looks them up several times for every minute
// it judges, and comparing time.Times was a quarter of its cost.
type minuteSums struct {
	at   []int64
	sums []uint64
}

// sums is sr's minuteSums, mins its minutes in order.
func (sr *series) sums(mins []time.Time) minuteSums {
	s := minuteSums{at: make([]int64, len(mins)), sums: make([]uint64, len(mins)+1)}
	for i, m := range mins {
		s.at[i] = m.UnixNano()
		s.sums[i+1] = s.sums[i] + sr.minutes[m]
	}
	return s
}

// before is the hits in minutes before t.
func (s minuteSums) before(t time.Time) uint64 {
	if t.IsZero() { // all time: UnixNano is undefined that far back
		return 0
	}
	i, _ := slices.BinarySearch(s.at, t.UnixNano())
	return s.sums[i]
}

// MinuteSource streams per-minute counts in site, path, minute order:
// ClickHouse, or a counts file for a backtest (CountsFile).
type MinuteSource interface {
	ScanMinutes(ctx context.Context, q traffic.MinuteScan, fn func(site, path string, minute time.Time, hits uint64) error) error
}

// scanSeries reads per-minute counts and gathers them per state key, for
// the rules keep accepts. It returns the rows read.
func scanSeries(ctx context.Context, src MinuteSource, set *ruleSet, q traffic.MinuteScan, keep func(*rules.Rule) bool) (map[string]*series, int, error) {
	all := map[string]*series{}
	rows := 0
	err := src.ScanMinutes(ctx, q, func(site, path string, minute time.Time, hits uint64) error {
		rows++
		pm := set.matching(site, path)
		for _, ri := range pm.rules {
			r := set.rules[ri]
			if !keep(r) {
				continue
			}
			key := set.key(ri, pm)
			sr := all[key]
			if sr == nil {
				sr = &series{rule: ri, site: site, path: path, minutes: map[time.Time]uint64{}}
				if r.Aggregate == rules.Sum {
					sr.path = ""
				}
				all[key] = sr
			}
			sr.minutes[minute] += hits
		}
		return nil
	})
	return all, rows, err
}
