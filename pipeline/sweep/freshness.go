package sweep

import (
	"context"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
)

// Freshness: each site's newest loaded minute. A site whose newest hit is
// older than data_late_after and than the silence its own minutes make
// unlikely at these hours (sitehours.go; lateAfterFor, from its normals,
// while it has no week of them) is late, and no drop is judged on its pages:
// a tailer that stopped, or a loader behind, is not a page gone quiet.
// Each rule that hears drops tells its receivers once that no data came
// from the site since its newest hit, and once when data flows again: an
// episode per (rule, site) in the state store, claimed like any other,
// so two sweepers racing send each message once.

// freshnessReach is how far back a site's newest minute is looked for:
// a site silent for longer is not late but gone (its "no data" episode
// stays open until data comes again).
const freshnessReach = 48 * time.Hour

// futureSlack is how far ahead of the sweeper's clock a site's newest
// minute may be and still count: a minute, its own, and clocks that
// drift. Past it a line was dated ahead (a clock that jumped, a forged
// syslog line), and taken as the site's newest it would keep the site
// from looking late for as long, its drops told on missing data.
const futureSlack = 5 * time.Minute

// noDataPrefix starts the state keys of "no data" episodes. Rule names
// start with [a-z0-9], so these keys are never taken for a page's state.
const noDataPrefix = "_nodata."

// freshness watches each site's newest minute, with the "no data"
// episodes it keeps in the state store.
type freshness struct {
	counts    Counter
	rates     func(end time.Time) map[string]float64 // baselines.siteRates
	state     *stateStore
	lateAfter time.Duration // data_late_after
	logger    *slog.Logger
	// hazards is how often each site's minutes have hits at each hour
	// (sitehours.go): what says a silence is late, for a site with a
	// week's history; the normals' views a minute (rates) otherwise.
	hazards *siteHazards
	// began is this sweeper's first check: a "no data" episode resolved
	// before its state kept when (Seen) resolved before it.
	began     time.Time
	beganOnce sync.Once // two sweeps of one sweeper may race (tests do)
}

func newFreshness(counts Counter, rates func(end time.Time) map[string]float64, state *stateStore, lateAfter time.Duration, logger *slog.Logger) *freshness {
	return &freshness{counts: counts, rates: rates, state: state, lateAfter: lateAfter, logger: logger,
		hazards: &siteHazards{counts: counts}}
}

// lateAfterFor is how old a site's newest hit may be before its data is
// late: data_late_after, or longer for a site whose normals expect so
// few views a minute that a longer gap is its normal (a blog of a view
// every 20 minutes is not late between them). A site with no normal
// above 0 is never late: none of its pages can drop.
func (f *freshness) lateAfterFor(rate float64) (time.Duration, bool) {
	if rate <= 0 {
		return 0, false
	}
	// A gap this long comes by chance once in lateOdds days of minutes
	// with hits at this rate.
	quiet := time.Duration(lateBar(-math.Expm1(-rate)*24*60) / rate * float64(time.Minute))
	return max(f.lateAfter, quiet), true
}

// check marks the observations of late sites and steps the "no data"
// episodes of the rules that hold drops while data is late
// (Detector.HoldsLateDrops), and says how many sites are late. It reads
// only when some rule holds drops.
func (f *freshness) check(ctx context.Context, set *ruleSet, obs map[string][]observation, now time.Time) ([]*verdict, int, error) {
	var down []*rules.Rule
	for _, r := range set.rules {
		if saysNoData(r) {
			down = append(down, r)
		}
	}
	if len(down) == 0 {
		return nil, 0, nil
	}
	f.beganOnce.Do(func() { f.began = now })
	// Hits dated ahead of now by more than a clock's drift are not
	// taken for fresh data.
	ends, err := f.counts.DataEnds(ctx, now.Add(-freshnessReach), now.Add(futureSlack))
	if err != nil {
		return nil, 0, err
	}
	// A site is late when its newest hit is older than data_late_after
	// and than the silence its minutes with hits make unlikely at these
	// hours (sitehours.go), or, for a site without hits in the last week
	// to tell them, its normals' views (lateAfterFor). Both are read only
	// when some site is past data_late_after.
	late := map[string]bool{}
	var (
		read    bool
		rates   map[string]float64
		hazards map[string]*hourHazards
	)
	for site, end := range ends {
		if !end.Before(now.Add(-f.lateAfter)) {
			continue
		}
		if !read {
			read = true
			rates = f.rates(now.Truncate(time.Minute).Add(time.Minute))
			if hazards, err = f.hazards.of(ctx, now); err != nil {
				return nil, 0, err
			}
		}
		after, ok := f.lateAfterFor(rates[site]) // no rate: no normal above 0, nothing to drop
		switch hz := hazards[site]; {
		case !ok:
		case hz != nil:
			_, late[site] = hz.quietUntil(end.Add(time.Minute), now)
		default:
			late[site] = end.Before(now.Add(-after))
		}
	}
	var out []*verdict
	lateUntil := map[string]time.Time{} // site → when it was last late
	for _, r := range down {
		for _, site := range slices.Sorted(maps.Keys(ends)) {
			if r.Site != "" && r.Site != site {
				continue
			}
			v, until, err := f.noData(ctx, r, site, ends[site], late[site], now)
			if err != nil {
				return nil, 0, err
			}
			if v != nil {
				out = append(out, v)
			}
			if until.After(lateUntil[site]) {
				lateUntil[site] = until
			}
		}
	}
	// A window, or a drop's hours (Reach.Long), that held a late
	// stretch is not judged down: the hits of its hole may never come,
	// and a rule firing at its first look (a spike rule) told the hour
	// after the data came back "went quiet".
	for k, list := range obs {
		for i := range list {
			o := &obs[k][i]
			o.late = late[o.site] || lateUntil[o.site].After(o.pt.from)
			if long := set.rules[o.pt.rule].Detector().Reach().Long; long > 0 {
				o.longLate = lateUntil[o.site].After(o.pt.to.Add(-long))
			}
		}
	}
	lateSites := 0
	for _, l := range late {
		if l {
			lateSites++
		}
	}
	return out, lateSites, nil
}

// noData steps one rule's "no data" episode for one site: it opens when
// the site is late, and resolves when its data is on time again. It also
// says when the site was last late: now, when it resolved (its state's
// Seen), or never (zero).
func (f *freshness) noData(ctx context.Context, r *rules.Rule, site string, end time.Time, late bool, now time.Time) (*verdict, time.Time, error) {
	key := noDataKey(r, site)
	st, rev, err := f.state.get(ctx, key)
	if err != nil {
		return nil, time.Time{}, err
	}
	until := st.Seen
	switch {
	case late || st.Open != nil:
		until = now
	case until.IsZero() && st.Episode > 0:
		// Resolved before its state kept when: at the latest when this
		// sweeper began.
		until = f.began
	}
	v := &verdict{key: key, rule: r, prev: st, rev: rev, next: st.State, pending: st.Pending}
	var x crossing.Crossing
	switch open := st.Open; {
	case late && open == nil:
		v.next.Episode++
		v.next.Open = &rules.Episode{Since: end, Site: site}
		v.next.Seen = now
		x = noDataCrossing(r, site, v.next.Episode, rules.EventFire, end, now)
		f.logger.Warn("no data from site since its newest hit; its drops are held until it flows again", "site", site, "since", end, "rule", r.Name)
	case !late && open != nil:
		v.next.Open, v.next.Seen = nil, now
		x = noDataCrossing(r, site, st.Episode, rules.EventResolve, open.Since, now)
		f.logger.Info("data flows again from site; its drops are judged again", "site", site, "newest", end, "rule", r.Name)
	default:
		if len(v.pending) == 0 {
			return nil, until, nil
		}
		return v, until, nil
	}
	v.fired = append(v.fired, x)
	return v, until, nil
}

// saysNoData reports whether a rule holds drops while a site's data is
// late (Detector.HoldsLateDrops), and so tells "no data" from the site:
// a per-page rule; a sum has no page to drop.
func saysNoData(r *rules.Rule) bool {
	return r.Detector().HoldsLateDrops() && r.Aggregate != rules.Sum
}

// noDataKey is a rule's "no data" episode key for a site, in the state
// store; its messages' keys add the episode.
func noDataKey(r *rules.Rule, site string) string {
	return noDataPrefix + r.Name + "." + bus.Key(site, "")
}

// noDataCrossing is the message of episode n of a rule's "no data" for a
// site, its fire or resolve, sent at: the site's data is late since its
// newest minute, since. A sweep and a backtest both send it.
func noDataCrossing(r *rules.Rule, site string, n uint64, ev rules.Event, since, at time.Time) crossing.Crossing {
	key := noDataKey(r, site) + "." + strconv.FormatUint(n, 10)
	if ev == rules.EventResolve {
		key += ".resolved"
	}
	return crossing.Crossing{Key: key, Rule: r.Name, Site: site, CrossedAt: at.UTC(), Event: string(ev),
		Recipients: r.Notify.Recipients, Receivers: r.Notify.Receivers, Labels: r.Notify.Labels,
		Why: &crossing.Why{Kind: crossing.KindNoData, Since: since}}
}
