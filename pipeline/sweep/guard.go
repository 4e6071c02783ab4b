package sweep

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/pipeline/sweep/pagestate"
)

// The client guard (rules.ClientGuard) keeps a per-page rule from firing
// on a surge most of which one client, or unidentified clients, sent.
// What it judges, and what it does not:
//
//   - Only the step that opens a surge: an up fire of a spike, new_page
//     or unusual rule (a threshold rule only when its guard is set). An
//     episode that fired is announced: its escalations and its "back to
//     normal" follow it unjudged, because the people told of it want to
//     hear how it went, and the why of each says who sent it (the
//     clients part, with its "mostly one client" mark). Drops are never
//     judged: a page gone quiet has no clients to blame.
//   - A held surge leaves the state as it was before the step: no
//     episode opens (so nothing can later send "back to normal" for a
//     surge never told), its episode number is not used, and its burst
//     is not remembered as the page's normal (unusual rules), so that
//     a real surge of the same size still fires. The state records the
//     hold and its reason (pagestate.Held) for the console.
//   - Each sweep steps the page again; while the surge lasts it is
//     judged again, so a page held at one sweep fires at a later one
//     once real people make most of the window. The hold is cleared
//     when the rule no longer would fire.
//   - At most maxGuardChecks surges are read per sweep, those read
//     longest ago (or never) first, largest first among equals. The
//     rest are held unchecked until a later sweep reads them: a
//     scraper walking a whole site makes a surge on every page at once,
//     the very storm the guard is for, and firing the unchecked ones
//     would mail it. A real surge waits a sweep or a few, never for
//     good, since what was read longest ago is read first.
//   - It fails open: with no Explainer, when the read fails or times
//     out, or when the window has no client data (hits loaded before
//     visitors were counted), the surge fires as it did before the
//     guard. A missed alert is silent, and nobody learns of it; an
//     extra one is seen, and its why says who sent it.
const (
	maxGuardChecks = 20
	guardTimeout   = 5 * time.Second
)

// guardCase is the step of a verdict's observations that would open a
// surge: the state before it, the observation, and how many of the
// verdict's crossings came before it (those stand).
type guardCase struct {
	before rules.State
	obs    observation
	fired  int
}

// opensSurge reports whether a step from before to next, firing fire,
// opens a surge that the rule's client guard judges.
func opensSurge(r *rules.Rule, before, next rules.State, fire []rules.Firing) bool {
	if r.Aggregate == rules.Sum {
		return false // a sum has no one page whose clients to read
	}
	if top, unknown := r.Clients.Limits(r.Kind()); top == 0 && unknown == 0 {
		return false
	}
	if r.Episodic() {
		// The episode opening, whether or not its fire is mailed.
		return before.Open == nil && next.Open != nil && !next.Open.Down
	}
	return len(fire) > 0
}

// guardClients judges the surges the verdicts would open and holds
// those the guard does not let fire, returning the verdicts still worth
// writing.
func (s *Sweeper) guardClients(ctx context.Context, vs []*verdict) []*verdict {
	var cases []*verdict
	for _, v := range vs {
		if v.guard != nil {
			cases = append(cases, v)
		}
	}
	if len(cases) == 0 {
		return vs
	}
	if s.explainer == nil {
		return vs // fail open: nothing to read clients from
	}
	slices.SortFunc(cases, func(a, b *verdict) int {
		if c := lastChecked(a).Compare(lastChecked(b)); c != 0 {
			return c
		}
		if c := cmp.Compare(b.guard.obs.count, a.guard.obs.count); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	check := cases[:min(len(cases), maxGuardChecks)]
	got := make([]*traffic.Clients, len(check))
	ctx, cancel := context.WithTimeout(ctx, guardTimeout)
	defer cancel()
	sem := make(chan struct{}, explainers)
	errs := parallel(len(check), func(i int) error {
		sem <- struct{}{}
		defer func() { <-sem }()
		v := check[i]
		from, to := guardWindow(v.guard.obs)
		e, err := s.explainer.Explain(ctx, traffic.ExplainQuery{Site: v.guard.obs.site, Path: v.guard.obs.path, From: from, To: to, Clients: true})
		if err != nil {
			return err
		}
		got[i] = e.Clients
		return nil
	})
	if len(errs) > 0 {
		s.logger.Warn("client guard: clients unread; those surges fire unjudged", "failed", len(errs), "of", len(check), "first", errs[0])
	}
	now := s.now().UTC()
	for i, v := range check {
		if got[i] == nil {
			continue // unread or no client data: fire (fail open)
		}
		top, unknown := v.rule.Clients.Limits(v.rule.Kind())
		if mostly, reason := judgeClients(got[i], top, unknown); mostly != "" {
			v.hold(now, now, mostly, reason)
			s.logger.Info("client guard: surge held", "rule", v.rule.Name, "key", v.key, "reason", reason)
		}
	}
	for _, v := range cases[len(check):] {
		v.hold(now, time.Time{}, "", "not checked yet: more surges than a sweep checks (the guard reads "+strconv.Itoa(maxGuardChecks)+" a sweep)")
	}
	if n := len(cases) - len(check); n > 0 {
		s.logger.Warn("client guard: surges held unchecked until a later sweep", "held", n, "checked", len(check))
	}
	out := vs[:0]
	for _, v := range vs {
		if v.changed() || len(v.pending) > 0 {
			out = append(out, v)
		}
	}
	return out
}

// lastChecked is when a verdict's page last had its clients read for a
// hold; zero when never (or not held).
func lastChecked(v *verdict) time.Time {
	if v.prev.Held == nil {
		return time.Time{}
	}
	return v.prev.Held.Checked
}

// hold undoes the step that would open the surge, and what followed it
// in this sweep, and records the hold: checked is when its clients were
// read (zero: not yet).
func (v *verdict) hold(now, checked time.Time, mostly, reason string) {
	g := v.guard
	v.next = g.before
	v.fired = v.fired[:g.fired]
	since := now
	if v.prev.Held != nil && !v.prev.Held.Since.IsZero() {
		since = v.prev.Held.Since
	}
	if checked.IsZero() && v.prev.Held != nil && v.prev.Held.Mostly != "" {
		// Not read this sweep: the last reading stands until the next.
		checked, mostly, reason = v.prev.Held.Checked, v.prev.Held.Mostly, v.prev.Held.Reason
	}
	v.held = &pagestate.Held{Since: since, At: now, Checked: checked, Mostly: mostly, Reason: reason}
}

// guardWindow is the window whose clients are judged: the rule's window
// at the observation, its last day for an all-time rule and its last
// week for longer ones, as a crossing's why reads them.
func guardWindow(o observation) (from, to time.Time) {
	q := explainQuery(crossing.Crossing{CrossedAt: o.pt.at, WindowFrom: o.pt.from, WindowTo: o.pt.to})
	return q.From, q.To
}

// judgeClients is the guard's verdict on a window's clients: the mark
// and its reason when the busiest client's share of the keyed views is
// over top, or that of the busiest few (a scraper spread over two or
// three addresses: traffic.FewClients), or the unknown clients' share of
// the hits over unknown (0: that limit is off); "" when the surge may
// fire.
//
// Two cases are left unjudged, as not knowing rather than knowing: the
// busiest client's share when fewer than half the views carry a client
// key (tailers without visitors, or not yet upgraded: a few keyed views
// would stand for all), and the unknown share when no hit of the window
// has any other class (a log format without user agents, or tailers
// that do not classify, make every hit unknown).
func judgeClients(c *traffic.Clients, top, unknown float64) (mostly, reason string) {
	if c == nil {
		return "", ""
	}
	if k, share := c.FewShare(top); top > 0 && k > 0 && c.Keyed*2 >= c.Views {
		who := "one client key sent "
		if k > 1 {
			who = fmt.Sprintf("%d client keys sent ", k)
		}
		return crossing.MostlyOneClient, "mostly one client: " + who + percent(share) + " of " + traffic.FormatViews(c.Keyed)
	}
	if share, ok := unknownShare(c); unknown > 0 && ok && share > unknown {
		return crossing.MostlyUnidentified, "mostly unidentified clients: " + percent(share) + " of " + traffic.FormatCount(hitsOf(c)) + " hits"
	}
	return "", ""
}

// unknownShare is the unknown class's share of a window's hits; ok is
// false when no hit has a known class, so the share says nothing.
func unknownShare(c *traffic.Clients) (share float64, ok bool) {
	var unknown, all uint64
	for _, k := range c.Classes {
		all += k.Hits
		if k.Class == "unknown" {
			unknown += k.Hits
		}
	}
	if all == 0 || unknown == all {
		return 0, false
	}
	return float64(unknown) / float64(all), true
}

func hitsOf(c *traffic.Clients) uint64 {
	var n uint64
	for _, k := range c.Classes {
		n += k.Hits
	}
	return n
}

// percent writes a share as a whole percent, not rounding a part up to
// 100%.
func percent(f float64) string {
	p := math.Round(f * 100)
	if p >= 100 && f < 1 {
		p = 99
	}
	return strconv.FormatFloat(p, 'f', 0, 64) + "%"
}
