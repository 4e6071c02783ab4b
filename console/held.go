package console

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/pagewatch/pagewatch/domain/rules"
)

// Surges the client guard holds (rules.ClientGuard): a page whose rule
// would fire but whose views came mostly from one client, or from
// clients without a key, has no crossing; the sweeper's state of the
// rule and page says why (pipeline/sweep/pagestate), and the page view
// and the live view show it beside the page.

const (
	// heldTTL is how long the live view reuses what it read of held
	// surges: a sweep judges them again about once a minute.
	heldTTL = 30 * time.Second
	// maxHeldReads bounds the states one refresh reads (a read per rule
	// and page, the busiest pages first); maxPageHeldRules the rules the
	// page view reads for its page.
	maxHeldReads     = 200
	maxPageHeldRules = 20
)

// heldShort is the live view's badge of a held surge: "mostly one
// client" or "mostly unidentified clients", the reason's first part;
// the whole reason is its tooltip.
func heldShort(reason string) string {
	for _, m := range []string{"mostly one client", "mostly unidentified clients"} {
		if strings.Contains(reason, m) {
			return m
		}
	}
	return "client guard"
}

// heldView is one rule whose surge on a page is held.
type heldView struct {
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
}

// heldOf reads which of the rules watching a page hold its surge, at
// most limit rules read; reads after the budget are skipped.
func heldOf(ctx context.Context, states RuleStates, rs []rules.Rule, site, path string, budget *int) ([]heldView, error) {
	var out []heldView
	if states == nil {
		return nil, nil
	}
	for _, r := range rs {
		if *budget <= 0 {
			break
		}
		if r.Aggregate == rules.Sum || !r.Matches(site, path) {
			continue
		}
		*budget--
		st, ok, err := states.State(ctx, r.Name, site, path, false)
		if err != nil {
			return out, err
		}
		if ok && st.Held != "" {
			out = append(out, heldView{Rule: r.Name, Reason: st.Held})
		}
	}
	return out, nil
}

// heldCache is the live view's held surges, read again every heldTTL.
type heldCache struct {
	states RuleStates
	rules  func() []rules.Rule

	mu   sync.Mutex
	at   time.Time
	held map[[2]string]string // page: the first held rule's reason, with its name
}

// reasons returns, for the pages (busiest first) that have a held surge,
// what holds it: "rule: mostly one client: ...". A read that fails
// leaves what was read before: the live view shows its numbers anyway.
func (c *heldCache) reasons(ctx context.Context, now time.Time, pages []LivePage) (map[[2]string]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.states == nil {
		return nil, nil
	}
	if c.held != nil && now.Sub(c.at) < heldTTL && now.After(c.at) {
		return c.held, nil
	}
	held, budget := map[[2]string]string{}, maxHeldReads
	rs := c.rules()
	for _, p := range pages {
		hv, err := heldOf(ctx, c.states, rs, p.Site, p.Path, &budget)
		if err != nil {
			return c.held, err
		}
		if len(hv) > 0 {
			held[[2]string{p.Site, p.Path}] = hv[0].Rule + ": " + hv[0].Reason
		}
		if budget <= 0 {
			break
		}
	}
	c.held, c.at = held, now
	return held, nil
}
