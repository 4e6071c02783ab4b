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

// siteViews is a backtest's views of a site per UTC hour, and the clocks
// learned from them at each hour judged.
type siteViews struct {
	reach  time.Duration // the rules' (rules.ClocksReach), as a sweep's
	hours  map[time.Time]float64
	first  time.Time
	learnt map[time.Time]*time.Location
	final  map[clocks.Change]clocks.Evidence // of the changes whose week is over
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
	for _, ch := range clocks.Changes(h.Add(-v.reach), h) {
		ev, ok := v.final[ch]
		if !ok {
			ev = clocks.Weigh(func(at time.Time) (float64, bool) {
				return v.hours[at], !at.Before(v.first)
			}, ch, h)
			if ch.Over(h) {
				v.final[ch] = ev
			}
		}
		evs = append(evs, ev)
	}
	verdict := clocks.Learned(evs)
	v.learnt[h] = verdict.Clock.Loc
	return verdict.Clock.Loc
}
