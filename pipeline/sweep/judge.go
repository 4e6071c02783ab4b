package sweep

import (
	"context"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/pipeline/sweep/pagestate"
)

// verdict is what one sweep decided for one state key: its next state,
// the crossings that fire now, and those an earlier sweep claimed but did
// not hand on.
type verdict struct {
	key     string
	rule    *rules.Rule
	prev    pageState
	rev     uint64
	next    rules.State
	fired   []crossing.Crossing
	pending []crossing.Crossing
	// guard is the step that would open a surge the rule's client guard
	// judges (guard.go); held, what the guard held, to be stored.
	guard *guardCase
	held  *pagestate.Held
}

func (v *verdict) changed() bool {
	return len(v.fired) > 0 || !reflect.DeepEqual(normal(v.prev.State), normal(v.next)) || !reflect.DeepEqual(v.prev.Held, v.held)
}

// stored is the state to write: the rule's, with pending and the hold.
func (v *verdict) stored(pending []crossing.Crossing) pageState {
	return pageState{State: v.next, Pending: pending, Held: v.held}
}

// normal drops what does not change behaviour: an empty Fired is nil,
// and a calendar window key matters only for what fired in it (a page
// that merely had hits in a new day needs no write).
func normal(s rules.State) rules.State {
	if len(s.Fired) == 0 {
		s.Fired, s.Window = nil, ""
	}
	return s
}

// judge steps every observed state through its observations, in time
// order. States of the rules in force that saw no hits this sweep are
// stepped with a count of 0 at the rule's current point, so rolling rules
// re-arm and calendar windows roll over without a query returning every
// quiet page.
func (s *Sweeper) judge(ctx context.Context, set *ruleSet, obs map[string][]observation, current []point) ([]*verdict, error) {
	var out []*verdict
	byName := make(map[string]int, len(set.rules))
	for i, r := range set.rules {
		byName[r.Name] = i
	}
	// A key may open an episode within this sweep, at a loud catch-up
	// moment: its later, quiet moments then need the normal too, for the
	// resolve's why.
	open := func(key string) bool {
		if list := obs[key]; len(list) > 1 && slices.ContainsFunc(list, func(o observation) bool { return !quiet(set.rules[o.pt.rule], o.count) }) {
			return true
		}
		st, _, err := s.state.get(ctx, key)
		return err == nil && st.Open != nil
	}
	if set.episodic && hasStandIns(obs) {
		// The rules a page's observation stood for are judged once it
		// has its normal (standIns), before the states are stepped as
		// below: they are then observed as if counted one by one.
		if err := s.baselines.expect(ctx, set, obs, open, s.now()); err != nil {
			return nil, err
		}
		standIns(set, obs)
	}
	for _, k := range s.state.keys() {
		name, _, _ := strings.Cut(k, ".")
		if i, ok := byName[name]; ok {
			if _, seen := obs[k]; !seen {
				o := observation{key: k, pt: current[i]}
				if st, _, err := s.state.get(ctx, k); err == nil && st.Open != nil {
					o.site, o.path = st.Open.Site, st.Open.Path
				}
				obs[k] = []observation{o}
			}
		}
	}
	// An episodic state seen only at catch-up moments (its page below
	// the count's floor now) is also judged at the current point, with a
	// count of 0 like an unseen one: an episode that came back while no
	// sweeper ran settles and resolves in this sweep, not the next. Not
	// for a rule looking down: its count has no floor, so its page was
	// counted now and left out as settled (weighStateless), and a count
	// of 0 would be a drop that is not there.
	for k, list := range obs {
		last := list[len(list)-1]
		if r := set.rules[last.pt.rule]; r.Episodic() && !r.Detector().LooksDown() && last.pt.at.Before(current[last.pt.rule].at) {
			obs[k] = append(list, observation{key: k, pt: current[last.pt.rule], site: last.site, path: last.path})
		}
	}
	if set.episodic {
		if err := s.baselines.expect(ctx, set, obs, open, s.now()); err != nil {
			return nil, err
		}
		nodata, late, err := s.freshness.check(ctx, set, obs, s.now())
		if err != nil {
			return nil, err
		}
		s.metrics.sitesLate.Set(float64(late))
		s.metrics.setClocks(s.baselines.learnedClocks())
		out = append(out, nodata...)
	} else {
		s.metrics.sitesLate.Set(0)
	}
	launches := s.siteLaunches(set, s.now())
	for key, list := range obs {
		r := set.rules[list[0].pt.rule]
		if len(list) == 1 && s.state.none(key) && r.Detector().Settled(list[0].ruleObservation()) {
			continue // no state, and this changes none: the normal just read says so (count left out those it knew)
		}
		st, rev, err := s.state.get(ctx, key)
		if err != nil {
			return nil, err
		}
		pagestate.FixLegacy(&st.State, r)
		v := &verdict{key: key, rule: r, prev: st, rev: rev, next: st.State, pending: st.Pending}
		for _, o := range list {
			before, nfired := v.next, len(v.fired)
			var fire []rules.Firing
			o.launches = launches[launchGroup{list[0].pt.rule, o.site}]
			v.next, fire = r.Judge(v.next, o.ruleObservation())
			if v.next.Open != nil && v.next.Open.Path == "" {
				v.next.Open.Site, v.next.Open.Path = o.site, o.path
			}
			markLaunch(&v.next, o.site)
			for _, f := range fire {
				v.fired = append(v.fired, crossingOf(s.logger, r, o, f))
			}
			if v.guard == nil && opensSurge(r, before, v.next, fire) {
				v.guard = &guardCase{before: before, obs: o, fired: nfired}
			}
		}
		if v.changed() || len(v.pending) > 0 || v.guard != nil {
			out = append(out, v)
		}
	}
	out = s.guardClients(ctx, out)
	slices.SortFunc(out, func(a, b *verdict) int { return strings.Compare(a.key, b.key) })
	return out, nil
}

// crossingOf builds the job for one firing, with the rule's templates
// rendered: a template that fails here (it passed on a sample at load)
// falls back to the mailer's default rather than losing the mail.
func crossingOf(logger *slog.Logger, r *rules.Rule, o observation, f rules.Firing) crossing.Crossing {
	path := o.path
	if r.Aggregate == rules.Sum {
		path = matchText(r)
	}
	window := r.Window.String()
	if r.Window.Kind == rules.AllTime {
		window = "all time" // how mails word it
	}
	x := crossing.Crossing{
		Key: o.key + "." + f.Key, Rule: r.Name, Site: o.site, Path: path, Window: window,
		Threshold: f.Threshold, Count: o.count, CrossedAt: o.pt.at.UTC(),
		Recipients: r.Notify.Recipients, Receivers: r.Notify.Receivers, Labels: r.Notify.Labels,
		WindowFrom: o.pt.from, WindowTo: o.pt.to,
	}
	data := rules.TemplateData{
		Rule: r.Name, Site: o.site, Path: path, Threshold: f.Threshold, Count: o.count,
		Window: r.Window.String(), WindowKey: r.Window.Key(o.pt.at), From: o.pt.from, To: o.pt.to,
		CrossedAt: o.pt.at, Labels: r.Notify.Labels, Pages: o.pages,
	}
	subject, body, subjectOK, bodyOK, err := r.Render(data)
	if err != nil {
		logger.Warn("rule template failed; the mail uses the default text", "rule", r.Name, "key", x.Key, "err", err)
	}
	if subjectOK {
		x.Subject = subject
	}
	if bodyOK {
		x.Body = body
	}
	if f.Event != "" {
		x.Event = string(f.Event)
		if f.Event != rules.EventFire {
			x.Key = o.key + "." + f.Key // episode.x5, episode.resolved
		}
	}
	if r.Aggregate != rules.Sum {
		// A sum's "page" is the rule's match: no one page to explain.
		x.Why = whyOf(r, o, f)
	}
	return x
}

// whyOf is what the sweep itself knows of why a page moved: the count,
// what the rule's detector measured it against (a threshold rule's: the
// level crossed) and the episode. The referrers, rank and busiest minute
// are added by explain (explain.go).
func whyOf(r *rules.Rule, o observation, f rules.Firing) *crossing.Why {
	a := r.Detector().Against(o.ruleObservation(), f)
	w := &crossing.Why{Kind: string(r.Kind()), Count: o.count, Step: f.Step,
		Baseline: a.Baseline, Low: a.Low, High: a.High, Factor: a.Factor, Days: a.Days, Weekly: a.Weekly, Trend: a.Trend,
		Burst: a.Burst, BurstCount: a.Short, BurstBaseline: a.ShortBaseline, BurstLow: a.ShortLow, BurstHigh: a.ShortHigh,
		Direction: a.Direction, Lasted: a.Lasted, BurstsLast: a.BurstsLast, NewNormal: a.NewNormal,
		Launch: a.Launch, LaunchPassed: a.LaunchPassed, LaunchRank: a.LaunchRank,
		Bursts: a.Bursts, BurstsPassed: a.BurstsPassed, HoursBefore: a.HoursBefore, HoursBeforeRatio: a.HoursBeforeRatio, HoursBeforeSpan: a.HoursBeforeSpan, Clock: o.clock,
		Since: f.Episode.Since, Peak: f.Episode.Peak, PeakAt: f.Episode.PeakAt,
		Raised: f.Raised, LevelEnded: f.LevelEnded}
	if f.Raised > 0 {
		w.RaisedSince = f.RaisedSince.UTC()
	}
	if !f.Episode.PeakAt.IsZero() {
		w.PeakAt = f.Episode.PeakAt.UTC()
		w.Since = f.Episode.Since.UTC()
	}
	if w.Baseline > 0 {
		w.Ratio = math.Round(float64(o.count)/w.Baseline*100) / 100
	}
	return w
}

// matchText is a rule's match as written, which names a sum rule's "page".
func matchText(r *rules.Rule) string {
	m := r.Match
	for _, s := range []string{m.Exact, m.Prefix, m.Glob, m.Regex} {
		if s != "" {
			return s
		}
	}
	return ""
}

// currentPoints is every rule evaluated at sweep time now.
func (s *Sweeper) currentPoints(set *ruleSet, now time.Time) []point {
	pts := make([]point, len(set.rules))
	for i, r := range set.rules {
		pts[i] = pointAt(i, r, s.evalTime(r, now), now)
	}
	return pts
}
