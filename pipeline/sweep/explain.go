package sweep

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// Explainer answers what a crossing's why needs beyond the sweep's
// counts: the page's rank on its site, its referrer domains against an
// earlier period and its busiest minute (sinks/clickhouse).
type Explainer interface {
	Explain(ctx context.Context, q traffic.ExplainQuery) (traffic.Explanation, error)
}

// Feeder says what the tailers and the loaders report of the logs that
// carry a site's hits (pipeline/tail/tailstatus): a "no data" message
// then says whether the pipeline lost them or the site wrote none.
type Feeder interface {
	Feeds(ctx context.Context, sites []string, now time.Time) (map[string]*crossing.Feeds, error)
}

// The sweeper, not the worker, explains a crossing: the why then goes
// once into the job, so the email, the webhook and the crossings history
// (written here) carry the same one, and a job redelivered hours later
// does not show referrers of a later hour. What bounds the cost a sweep
// pays for it:
const (
	// maxExplained crossings are explained per sweep, the first handed
	// on; the rest (a storm) go with the sweep's part of the why only.
	// Digests are never explained: their pages are listed, not told.
	maxExplained = 50
	// explainers run at once, and all of them within explainTimeout.
	explainers     = 4
	explainTimeout = 5 * time.Second
	// referrerPeriod is the period before the window that referrer
	// shares are compared with, and that a referrer is "new" against.
	referrerPeriod = 7 * 24 * time.Hour
	// maxRankWindow: longer windows are not ranked (the rank scans the
	// site's minutes over the window).
	maxRankWindow = 24 * time.Hour
	// maxExplainWindow: of a longer window (a month, all time), the last
	// week is searched for the busiest minute and the referrers, as the
	// email's chart does.
	maxExplainWindow = 7 * 24 * time.Hour
	// topDomains are shown; up to askDomains are read to find the new ones.
	topDomains      = 5
	askDomains      = 100
	maxNewReferrers = 10
)

// explain adds the rank, referrers, busiest minute and clients to the whys of the
// jobs to publish. The Why is shared by pointer with the crossing in all,
// so the history gets it too. Failures are logged: the mail goes out with
// what the sweep knows.
func (s *Sweeper) explain(ctx context.Context, jobs []job) {
	s.explainNoData(ctx, jobs)
	if s.explainer == nil {
		return
	}
	limits := map[string][2]float64{}
	if s.rules != nil {
		for _, r := range s.rules.current().rules {
			top, unknown := r.Clients.Limits(r.Kind())
			limits[r.Name] = [2]float64{top, unknown}
		}
	}
	var todo []crossing.Crossing
	for _, j := range jobs {
		// A "no data" message is of a site, with no page to explain.
		if j.x.Digest == nil && j.x.Why != nil && !j.x.Why.SiteWide() && len(todo) < maxExplained {
			todo = append(todo, j.x)
		}
	}
	if len(todo) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, explainTimeout)
	defer cancel()
	sem := make(chan struct{}, explainers)
	errs := parallel(len(todo), func(i int) error {
		sem <- struct{}{}
		defer func() { <-sem }()
		x := todo[i]
		e, err := s.explainer.Explain(ctx, explainQuery(x))
		if err != nil {
			return err
		}
		addExplanation(x.Why, e)
		addClients(x.Why, e.Clients, limits[x.Rule])
		return nil
	})
	if len(errs) > 0 {
		s.logger.Warn("some crossings go without rank, referrers or busiest minute", "failed", len(errs), "of", len(todo), "first", errs[0])
	}
}

// explainQuery is what to ask for a crossing: its window (the last day
// for all-time rules), ranked when it is short.
func explainQuery(x crossing.Crossing) traffic.ExplainQuery {
	from, to := x.WindowFrom, x.WindowTo
	if to.IsZero() {
		to = x.CrossedAt.Truncate(time.Minute).Add(time.Minute)
	}
	rank := !from.IsZero() && to.Sub(from) <= maxRankWindow
	if from.IsZero() {
		from = to.Add(-24 * time.Hour)
	}
	if to.Sub(from) > maxExplainWindow {
		from = to.Add(-maxExplainWindow)
	}
	return traffic.ExplainQuery{Site: x.Site, Path: x.Path, From: from, To: to, Count: x.Count, Rank: rank,
		BaselineFrom: from.Add(-referrerPeriod), Domains: askDomains, Clients: true}
}

// addExplanation fills in w from e: the top domains with their shares in
// the window and in the period before, and those the page had no hit
// from before.
func addExplanation(w *crossing.Why, e traffic.Explanation) {
	w.Rank, w.RankOf = e.Rank, e.RankOf
	if !e.BusiestMinute.IsZero() {
		w.BusiestMinute, w.BusiestHits = e.BusiestMinute.UTC(), e.BusiestHits
	}
	share := func(n, of uint64) float64 {
		if of == 0 {
			return 0
		}
		return float64(int(float64(n)/float64(of)*1000+0.5)) / 1000
	}
	w.Referrers, w.NewReferrers = nil, nil
	for _, d := range e.Domains {
		if len(w.Referrers) < topDomains {
			w.Referrers = append(w.Referrers, crossing.ReferrerShare{Domain: d.Domain, Hits: d.Window,
				Share: share(d.Window, e.WindowHits), BaselineShare: share(d.Baseline, e.BaselineHits)})
		}
		if d.Baseline == 0 && len(w.NewReferrers) < maxNewReferrers {
			w.NewReferrers = append(w.NewReferrers, d.Domain)
		}
	}
}

// addClients fills in the why's clients part from c, marked "mostly"
// past the rule's guard shares (limits: top, unknown), or past half for
// a rule whose guard is off (a threshold rule): the mark tells, it does
// not hold. An escalation or a resolve of an episode the guard let fire
// is marked too, if a scraper took it over since.
func addClients(w *crossing.Why, c *traffic.Clients, limits [2]float64) {
	if c == nil {
		w.Clients = nil
		return
	}
	wc := &crossing.Clients{Views: c.Views, Keyed: c.Keyed, Visitors: c.Visitors, TopViews: c.TopViews,
		TopShare: round3(c.TopShare()), Hits: hitsOf(c)}
	for _, k := range c.Classes {
		share := 0.0
		if wc.Hits > 0 {
			share = round3(float64(k.Hits) / float64(wc.Hits))
		}
		wc.Classes = append(wc.Classes, crossing.ClassShare{Class: k.Class, Hits: k.Hits, Share: share, Counted: k.Counted})
	}
	top, unknown := limits[0], limits[1]
	if top == 0 {
		top = markShare
	}
	if unknown == 0 {
		unknown = markShare
	}
	wc.Mostly, _ = judgeClients(c, top, unknown)
	w.Clients = wc
}

// markShare is the share past which a why is marked "mostly one client"
// or "mostly unidentified clients" when its rule's guard is off.
const markShare = 0.5

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// explainNoData adds to each "no data" message (its fire: the resolve
// says data flows) what the tailers and loaders report of the site's
// logs, read once for all of them. A failure is logged: the message
// goes out saying when the data stopped, as without a Feeder.
func (s *Sweeper) explainNoData(ctx context.Context, jobs []job) {
	if s.feeds == nil {
		return
	}
	noData := func(x crossing.Crossing) bool { return x.Why.SiteWide() && x.Event == string(rules.EventFire) }
	var sites []string
	for _, j := range jobs {
		if noData(j.x) && !slices.Contains(sites, j.x.Site) {
			sites = append(sites, j.x.Site)
		}
	}
	if len(sites) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, explainTimeout)
	defer cancel()
	feeds, err := s.feeds.Feeds(ctx, sites, s.now())
	if err != nil {
		s.logger.Warn("no data messages go without all the tailers and loaders say of their sites' logs", "sites", len(sites), "err", err)
	}
	for _, j := range jobs {
		if f, ok := feeds[j.x.Site]; ok && noData(j.x) {
			j.x.Why.Feeds = f
		}
	}
}
