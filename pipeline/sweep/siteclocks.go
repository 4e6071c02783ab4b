package sweep

import (
	"time"

	"github.com/pagewatch/pagewatch/domain/clocks"
)

// A rule with `zone: auto` reads each site's normal on the clocks its
// readers keep, learned from the site's views per hour in the week after
// each change of a candidate clock (package clocks): a sweep with a
// clocks.Learner over ClickHouse, a backtest from its rows before the
// moment judged, so that it never knows what a sweep would not have.

// siteViews is a backtest's views of a site per UTC hour (by Unix hour:
// a map of time.Time is slow on a path every row takes), and the clocks
// learned from them at each hour judged.
type siteViews struct {
	reach  time.Duration // the rules' (rules.ClocksReach), as a sweep's
	hours  map[int64]float64
	first  int64
	learnt map[int64]*time.Location
	final  map[clocks.Change]clocks.Evidence // of the changes whose week is over
}

func unixHour(t time.Time) int64 { return t.Unix() / 3600 }

func (v *siteViews) add(minute time.Time, hits uint64) {
	h := unixHour(minute)
	if v.hours == nil {
		v.hours, v.first = map[int64]float64{}, h
	}
	v.hours[h] += float64(hits)
	v.first = min(v.first, h)
}

// clockAt is the site's clocks as a sweep at t would have learned them
// (nil: UTC's).
func (v *siteViews) clockAt(t time.Time) *time.Location {
	if v.hours == nil {
		return nil
	}
	h := unixHour(t)
	if loc, ok := v.learnt[h]; ok {
		return loc
	}
	if v.learnt == nil {
		v.learnt, v.final = map[int64]*time.Location{}, map[clocks.Change]clocks.Evidence{}
	}
	loc := clocks.Learn(func(at time.Time) (float64, bool) {
		return v.hours[unixHour(at)], unixHour(at) >= v.first
	}, time.Unix(h*3600, 0).UTC(), v.reach, v.final).Clock.Loc
	v.learnt[h] = loc
	return loc
}
