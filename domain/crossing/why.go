package crossing

import (
	"math"
	"strconv"
	"time"
)

// Why says why a page moved, for the people a crossing reaches and for
// other channels (it is the JSON form under "why" in the job): how far
// the count is from the page's normal, where the page stands on its site,
// which referrers drove it and when it peaked. Every field but Kind and
// Count may be missing: a threshold rule has no baseline, raw hits older
// than their retention have no referrers.
type Why struct {
	// Kind is the rule's kind: threshold, spike or new_page.
	Kind  string `json:"kind"`
	Count uint64 `json:"count"`
	// Baseline is the page's normal for the window (spike: the median of
	// the baseline windows; new_page: the views in the lookback, 0) and
	// Factor the rule's multiple of it; Ratio is Count / Baseline (0 when
	// the baseline is 0).
	Baseline float64 `json:"baseline"`
	// Low and High are the page's usual range for the window (unusual
	// rules): "640 views in 1h, expected 120–180". Days is how many days
	// of history the normal came from, Weekly whether it knew the week
	// (same weekday) or only the hour of day; Burst, when set, is the
	// short window the count that fired was over (a burst of minutes).
	Low    float64       `json:"low,omitempty"`
	High   float64       `json:"high,omitempty"`
	Days   int           `json:"days,omitempty"`
	Weekly bool          `json:"weekly,omitempty"`
	Burst  time.Duration `json:"burst,omitempty"`
	Factor float64       `json:"factor,omitempty"`
	Ratio  float64       `json:"ratio,omitempty"`
	// Direction is up or down (a page gone quiet).
	Direction string `json:"direction,omitempty"`
	// Step is the escalate step reached (an escalate message).
	Step float64 `json:"step,omitempty"`
	// Since, Peak and PeakAt describe the episode; Total is its views
	// from the start of the window it fired in to its end (resolve).
	Since  time.Time `json:"since,omitzero"`
	Peak   uint64    `json:"peak,omitempty"`
	PeakAt time.Time `json:"peak_at,omitzero"`
	Total  uint64    `json:"total,omitempty"`
	// Rank is the page's place on its site by views in the window (1:
	// the busiest), among RankOf pages counted.
	Rank   int `json:"rank,omitempty"`
	RankOf int `json:"rank_of,omitempty"`
	// Referrers are the referrer domains that sent the most views in the
	// window, with their share of the window's views against their share
	// over the baseline period; NewReferrers are those that sent the
	// page nothing in the baseline period.
	Referrers    []ReferrerShare `json:"referrers,omitempty"`
	NewReferrers []string        `json:"new_referrers,omitempty"`
	// BusiestMinute is the window's minute with the most views.
	BusiestMinute time.Time `json:"busiest_minute,omitzero"`
	BusiestHits   uint64    `json:"busiest_hits,omitempty"`
}

// ReferrerShare is one referrer domain's part in a window and before it.
type ReferrerShare struct {
	Domain        string  `json:"domain"`
	Hits          uint64  `json:"hits"`
	Share         float64 `json:"share"`          // of the window's views with a referrer, 0..1
	BaselineShare float64 `json:"baseline_share"` // the same over the baseline period
}

// KindNoData is the why's kind of a message about a whole site whose
// data stopped arriving (a "no data" episode of a rule that hears drops),
// not about a page.
const KindNoData = "no_data"

// SiteWide reports whether the message is of a whole site, not a page.
func (w *Why) SiteWide() bool { return w != nil && w.Kind == KindNoData }

// RangeText is the usual range, short, for headlines: "expected
// 120–180"; "" when the rule has none.
func (w *Why) RangeText() string {
	if w == nil || w.High <= 0 {
		return ""
	}
	return "expected " + strconv.FormatFloat(math.Floor(w.Low), 'f', 0, 64) + "–" + strconv.FormatFloat(math.Ceil(w.High), 'f', 0, 64)
}

// ExpectedText is the usual range in words, for every receiver alike:
// "expected 120–180 views, from 4 weeks of history (same weekday)", or
// "" when the rule has none (threshold, spike, new_page).
func (w *Why) ExpectedText() string {
	if w == nil || w.High <= 0 {
		return ""
	}
	s := w.RangeText() + " views"
	switch {
	case w.Days >= 14 && w.Weekly:
		s += ", from " + strconv.Itoa(w.Days/7) + " weeks of history (same weekday)"
	case w.Days == 1:
		s += ", from 1 day of history"
	case w.Days > 0:
		s += ", from " + strconv.Itoa(w.Days) + " days of history"
	}
	if w.Burst > 0 {
		s += "; fired on a burst of " + strconv.Itoa(int(w.Burst/time.Minute)) + " minutes"
	}
	return s
}
