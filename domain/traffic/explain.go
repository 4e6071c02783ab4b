package traffic

import "time"

// ExplainQuery asks what a crossing's why needs of one page, beyond what
// a sweep counted: its rank on its site, its referrer domains against
// an earlier period, and its busiest minute. Every part reads one page,
// or one site over one window, so it is bounded by the window.
type ExplainQuery struct {
	Site, Path string
	// From and To bound the window, [From, To).
	From, To time.Time
	// Count is the page's views in the window: its rank is one more than
	// the pages of its site with more.
	Count uint64
	// Rank asks for the rank; callers leave it off for windows too long
	// to scan a site's minutes over.
	Rank bool
	// BaselineFrom starts the period the referrer domains are compared
	// with, [BaselineFrom, From); zero asks for no referrers.
	BaselineFrom time.Time
	// Domains bounds the referrer domains returned, most hits in the
	// window first.
	Domains int
	// Clients asks who sent the window's hits (Explanation.Clients).
	Clients bool
}

// Explanation answers an ExplainQuery. Parts not asked for, or without
// data (raw hits past their retention), are zero.
type Explanation struct {
	// Rank is the page's place on its site by views in the window (1:
	// the busiest) among RankOf pages with views in it.
	Rank, RankOf int
	// Domains are the referrer domains with hits in the window, most
	// first; WindowHits and BaselineHits count the hits with a referrer
	// domain in the window and in the baseline period, the shares'
	// denominators.
	Domains                  []DomainHits
	WindowHits, BaselineHits uint64
	// BusiestMinute is the window's minute with the most views (the
	// earliest of equals); zero when the window had none.
	BusiestMinute time.Time
	BusiestHits   uint64
	// Clients is who sent the window's hits; nil when not asked, or when
	// nothing of the window is in page_clients (raw hits past their
	// retention, or loaded before visitors were counted).
	Clients *Clients
}

// Clients is who sent a page's hits in a window: its views against its
// visitors, the busiest client's share, and each class's hits.
type Clients struct {
	// Views are the counted hits; Keyed those of them with a client key,
	// the denominator of the visitor figures (0: no tailer keys clients).
	Views, Keyed uint64
	// Visitors are the distinct client keys among the counted hits.
	Visitors uint64
	// TopViews are the counted hits of the busiest client key; Busiest
	// those of the busiest FewClients keys, most first (TopViews is
	// Busiest[0]).
	TopViews uint64
	Busiest  []uint64
	// Classes are the hits of each client class, counted or not, most
	// first; classes without hits are left out.
	Classes []ClassHits
}

// ClassHits is one client class's hits in a window.
type ClassHits struct {
	Class   string // domain/hit.Class's name: human, bot, ai_agent, ai_crawler, unknown
	Hits    uint64
	Counted bool // the tailers counted them as views
}

// FewClients is how many of the busiest client keys Clients.Busiest
// holds: a scraper may spread over a few addresses, and the client guard
// (domain/rules.ClientGuard) looks at them together.
const FewClients = 3

// FewShare is the smallest number k of the busiest client keys (1 to
// FewClients) whose share of the keyed views is over limit, and that
// share; 0 and the busiest FewClients' share when none is.
func (c *Clients) FewShare(limit float64) (k int, share float64) {
	if c == nil || c.Keyed == 0 {
		return 0, 0
	}
	var sum uint64
	for i, n := range c.Busiest {
		sum += n
		share = float64(sum) / float64(c.Keyed)
		if share > limit {
			return i + 1, share
		}
	}
	return 0, share
}

// TopShare is the busiest client's share of the keyed views, 0 to 1
// (0 when no view has a key).
func (c *Clients) TopShare() float64 {
	if c == nil || c.Keyed == 0 {
		return 0
	}
	return float64(c.TopViews) / float64(c.Keyed)
}

// DomainHits is one referrer domain's hits in a window and in the
// baseline period before it. The domain is taken from referers written
// by strangers: it may contain anything.
type DomainHits struct {
	Domain           string
	Window, Baseline uint64
}
