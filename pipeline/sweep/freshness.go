package sweep

import (
	"context"
	"time"
)

// freshness knows how current each site's data is: the newest minute
// loaded per site. A site whose newest hit is older than data_late_after
// is late, and no drop is judged on its pages: a tailer that stopped, or
// a loader behind, is not a page gone quiet. The sweeper says so once
// when a site goes late and once when its data flows again.
type freshness struct {
	late map[string]time.Time // late site → its newest minute when found late
}

// freshnessReach is how far back a site's newest minute is looked for:
// a site silent for longer is not late but gone, and its pages' own
// normals stop expecting views.
const freshnessReach = 48 * time.Hour

// markLate reads each site's newest minute and flags the observations of
// late sites. It reads only when some rule looks down.
func (s *Sweeper) markLate(ctx context.Context, set *ruleSet, obs map[string][]observation, now time.Time) error {
	looksDown := false
	for _, r := range set.rules {
		looksDown = looksDown || r.Detector().LooksDown()
	}
	if !looksDown {
		return nil
	}
	ends, err := s.counts.DataEnds(ctx, now.Add(-freshnessReach))
	if err != nil {
		return err
	}
	f := s.fresh
	if f.late == nil {
		f.late = map[string]time.Time{}
	}
	lateAt := now.Add(-s.cfg.DataLateAfter)
	for site, end := range ends {
		_, was := f.late[site]
		switch late := end.Before(lateAt); {
		case late && !was:
			f.late[site] = end
			s.logger.Warn("no data from site since its newest hit; drops are held until it flows again", "site", site, "since", end, "late_after", s.cfg.DataLateAfter)
		case !late && was:
			delete(f.late, site)
			s.logger.Info("data flows again from site; drops are judged again", "site", site, "newest", end)
		}
	}
	for site := range f.late {
		if _, ok := ends[site]; !ok {
			delete(f.late, site) // silent past the reach: gone, not late
		}
	}
	for k, list := range obs {
		for i := range list {
			if _, late := f.late[list[i].site]; late {
				obs[k][i].late = true
			}
		}
	}
	return nil
}
