package rules

import "fmt"

// Count is what a rule counts on each page.
type Count string

// The counts. Empty means CountViews.
const (
	// CountViews counts page views: the hits of the client classes the
	// tailers count (ingest.tail.pages.count_classes).
	CountViews Count = "views"
	// CountVisitors counts distinct visitors among those hits: distinct
	// client keys, a keyed hash of address and user agent whose salt
	// changes every UTC day (docs/privacy.md). A visitor is therefore
	// one over a window within a UTC day, and may be two across
	// midnight; visitor counts reach back as far as raw hits are kept
	// (ingest.load.retention.raw_hits_days).
	CountVisitors Count = "visitors"
)

// ClientGuard keeps a rule that judges a page against its own past from
// firing on a surge that is not people reading: most of the window's
// views from one client (a scraper with a browser's user agent), or from
// clients that are neither a browser nor a known crawler (scripts that
// got through). Such a surge is still seen: the page is marked as held,
// with the reason, in the console; no message goes out.
type ClientGuard struct {
	// MaxTopShare: a surge whose busiest client, or busiest two or three
	// together (a scraper spread over a few addresses), sent more than
	// this share of the window's views (with a client key) does not fire.
	// nil: 0.5 for spike, new_page and unusual rules, off for threshold
	// rules (a threshold is the user's own number); 0 turns it off.
	MaxTopShare *float64 `yaml:"max_top_share,omitempty"`
	// MaxUnknownShare: a surge more than this share of whose hits came
	// from clients of class unknown does not fire. Defaults as
	// MaxTopShare.
	MaxUnknownShare *float64 `yaml:"max_unknown_share,omitempty"`
}

// defaultGuardShare is both guards' share for the kinds that judge a
// page against its past: more than half of a surge from one client is
// not a page taking off.
const defaultGuardShare = 0.5

// Limits are the guard's shares for a rule of kind k: the busiest
// client's share of a window's keyed views, and the unknown clients'
// share of its hits, above which the rule does not fire; 0: no limit.
func (g ClientGuard) Limits(k Kind) (top, unknown float64) {
	share := func(set *float64) float64 {
		switch {
		case set != nil:
			return *set
		case k == KindThreshold:
			return 0
		}
		return defaultGuardShare
	}
	return share(g.MaxTopShare), share(g.MaxUnknownShare)
}

// validateClients checks count and clients.
func (r *Rule) validateClients(add func(field, format string, args ...any)) {
	switch r.Count {
	case "":
		r.Count = CountViews // so the effective config shows it
	case CountViews:
	case CountVisitors:
		if r.Aggregate == Sum {
			add(".count", "visitors cannot be summed over pages (one person reading two pages is one visitor of each); use aggregate: per_page or count: views")
		}
		if r.Window.Kind == AllTime {
			add(".count", "visitors are counted as far back as raw hits are kept, not all time; use a rolling or calendar window")
		}
	default:
		add(".count", "must be views or visitors, got %q", r.Count)
	}
	for _, g := range []struct {
		key string
		v   *float64
	}{{".clients.max_top_share", r.Clients.MaxTopShare}, {".clients.max_unknown_share", r.Clients.MaxUnknownShare}} {
		if g.v != nil && (*g.v < 0 || *g.v >= 1) {
			add(g.key, "must be a share from 0 (off) to below 1, got %s", fmt.Sprint(*g.v))
		}
	}
}
