package clocks

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

// HourReader is what a Learner reads: each site's views per UTC hour in
// [from, to) (the sweep's and the console's ClickHouse port).
type HourReader interface {
	SiteHours(ctx context.Context, from, to time.Time) ([]traffic.SiteHour, error)
}

// A Learner keeps every site's learned clocks, read from the sites' views
// per hour around each candidate's change within reach: the evidence of
// a change whose week is over is kept as it is, the others' read again
// every hour. It is safe for concurrent use.
type Learner struct {
	src    HourReader
	logger *slog.Logger

	mu    sync.Mutex
	read  time.Time
	reach time.Duration // of what was read
	final map[Change]map[string]Evidence
	of    map[string]*time.Location
}

// NewLearner learns clocks from src. A nil logger logs nothing.
func NewLearner(src HourReader, logger *slog.Logger) *Learner {
	return &Learner{src: src, logger: logger}
}

// learnEvery is how often a Learner weighs again the changes whose week
// is not over.
const learnEvery = time.Hour

// EvidenceBefore is how far before a change its evidence reads: a week
// back, and the hour a change of clocks can add to it.
const EvidenceBefore = evidenceFor + time.Hour

// keepFinal is how long a change's final evidence is kept.
const keepFinal = 366 * 24 * time.Hour

// retryAfter is how soon a Learner whose read failed reads again.
const retryAfter = 5 * time.Minute

// At is each site's clocks as of now, from the changes within reach
// before it (how far back the normals read: a change further back moves
// none of them): a site on UTC's is not in it. On an error (logged) it
// is what was learned before (nil at first), and it reads again after
// retryAfter: a sweep judges on the clocks it knows rather than not at
// all.
func (l *Learner) At(ctx context.Context, now time.Time, reach time.Duration) (map[string]*time.Location, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.read.IsZero() && reach == l.reach && now.Sub(l.read) < learnEvery && !now.Before(l.read) {
		return l.of, nil
	}
	if l.final == nil {
		l.final = map[Change]map[string]Evidence{}
	}
	called := now
	now = now.UTC().Truncate(time.Hour)
	bySite := map[string][]Evidence{}
	for _, ch := range Changes(now.Add(-reach), now) {
		evs, ok := l.final[ch]
		if !ok {
			end := ch.At.Add(evidenceFor)
			if now.Before(end) {
				end = now
			}
			rows, err := l.src.SiteHours(ctx, ch.At.Add(-EvidenceBefore), end)
			if err != nil {
				l.read, l.reach = called.Add(retryAfter-learnEvery), reach
				err = fmt.Errorf("learning the sites' clocks: %w", err)
				if l.logger != nil {
					l.logger.Warn("the sites' clocks could not be read; normals stay on those learned before", "err", err, "retry_in", retryAfter)
				}
				return l.of, err
			}
			evs = WeighSites(rows, ch, end)
			if ch.Over(end) {
				l.final[ch] = evs
			}
		}
		for site, ev := range evs {
			bySite[site] = append(bySite[site], ev)
		}
	}
	for ch := range l.final {
		// Kept for a year, not the reach: callers asking different
		// reaches (the console's rules) do not read a change again.
		if ch.At.Before(now.Add(-keepFinal)) {
			delete(l.final, ch)
		}
	}
	of := map[string]*time.Location{}
	for site, evs := range bySite {
		v := Learned(evs)
		if v.Clock.Loc == nil {
			continue
		}
		of[site] = v.Clock.Loc
		if l.of[site] != v.Clock.Loc && l.logger != nil {
			l.logger.Info("a site's readers keep a zone's clocks: its normals are read on them",
				"site", site, "zone", v.Clock.Name, "change", v.Evidence.Change.At, "z", v.Evidence.Z, "pairs", v.Evidence.Pairs)
		}
	}
	l.of, l.read, l.reach = of, now, reach
	return of, nil
}

// WeighSites weighs ch for each site in rows from its views per hour,
// every hour from its first row on known (an hour without a row: no
// views), as of now.
func WeighSites(rows []traffic.SiteHour, ch Change, now time.Time) map[string]Evidence {
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
	out := make(map[string]Evidence, len(views))
	for site, vs := range views {
		from := first[site]
		out[site] = Weigh(func(h time.Time) (float64, bool) {
			return vs[h], !h.Before(from)
		}, ch, now)
	}
	return out
}
