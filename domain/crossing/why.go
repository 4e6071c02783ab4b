package crossing

import (
	"math"
	"strconv"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
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
	// other window the count that fired was over: a burst of minutes, or
	// a drop's hours together (direction down).
	Low    float64 `json:"low,omitempty"`
	High   float64 `json:"high,omitempty"`
	Days   int     `json:"days,omitempty"`
	Weekly bool    `json:"weekly,omitempty"`
	// Trend is the page's growth a week (0.09: 9 %) its normal's weekly
	// samples were carried forward by (unusual rules; 0: none).
	Trend float64 `json:"trend,omitempty"`
	// Clock is the zone whose clocks the normal was read on when they
	// were learned from the site's traffic (zone: auto), "" on UTC's.
	Clock string        `json:"clock,omitempty"`
	Burst time.Duration `json:"burst,omitempty"`
	// BurstCount is the burst's views (Burst set), BurstBaseline its
	// normal and BurstLow–BurstHigh its usual range: what a burst was
	// judged on, which the hour's count may not show ("28 views in 1h,
	// expected 1–29" fired on "20 views in 10 minutes, expected 0–3"),
	// or a drop ("15 views in 3 hours, expected 43–103").
	BurstCount    uint64  `json:"burst_count,omitempty"`
	BurstBaseline float64 `json:"burst_baseline,omitempty"`
	BurstLow      float64 `json:"burst_low,omitempty"`
	BurstHigh     float64 `json:"burst_high,omitempty"`
	// Lasted, when set, is how long the page had been past its usual
	// range when it was heard under the count of its own usual bursts,
	// by outlasting them: their runs last BurstsLast. "Above it for
	// 2 h 40 min, longer than its usual bursts (1 h 40 min)."
	Lasted     time.Duration `json:"lasted,omitempty"`
	BurstsLast time.Duration `json:"bursts_last,omitempty"`
	Factor     float64       `json:"factor,omitempty"`
	Ratio      float64       `json:"ratio,omitempty"`
	// Direction is up or down (a page gone quiet).
	Direction string `json:"direction,omitempty"`
	// Step is the escalate step reached (an escalate message).
	Step float64 `json:"step,omitempty"`
	// NewNormal marks a resolve whose page had not come back: its normal
	// followed it down ("has not come back": a page renamed, deleted or
	// gone from search) or up ("has stayed up").
	NewNormal bool `json:"new_normal,omitempty"`
	// Raised is the multiple of its normal a page that rose for good
	// was judged at, since RaisedSince: on a fire or escalate, the
	// normal said is that level's; on a resolve with NewNormal, the
	// level it is judged at from now ("has stayed up at 2.6×"); on one
	// with LevelEnded, the level it left ("is back to its old level").
	Raised      float64   `json:"raised,omitempty"`
	RaisedSince time.Time `json:"raised_since,omitzero"`
	LevelEnded  bool      `json:"level_ended,omitempty"`
	// Launch marks the fire of a new page in its launch, judged against
	// its site's launches of 4 weeks, not its own history of nothing:
	// LaunchPassed is the second largest of those, which it passed (0:
	// the site had fewer than two).
	Launch       bool   `json:"launch,omitempty"`
	LaunchPassed uint64 `json:"launch_passed,omitempty"`
	// LaunchRank is which of the site's launches LaunchPassed is: the
	// 2nd largest (0 reads as 2), or on a site that launches more than
	// 40 pages in 4 weeks, the one at 1 in 20.
	LaunchRank int `json:"launch_rank,omitempty"`
	// Bursts, when set, marks the fire of a page whose bursts are its
	// normal (at nothing, or little, between them), judged against
	// them: BurstsPassed is what its Bursts remembered bursts of 4
	// weeks reach but 1 in 50, or factor × the highest of them (in
	// views in the window), which it passed.
	Bursts       int    `json:"bursts,omitempty"`
	BurstsPassed uint64 `json:"bursts_passed,omitempty"`
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
	// Clients is who sent the window's hits: views against visitors,
	// the busiest client's share, each class's share. Nil: not known
	// (hits loaded before visitors were counted, or past retention).
	// Only numbers and class names: nothing in it is a stranger's text.
	Clients *Clients `json:"clients,omitempty"`
	// HoursBefore, when set, is the views of the HoursBeforeSpan before
	// the window that a surge was heard against: on the page's past days
	// the window was HoursBeforeRatio × them ("726 views in 1h after 806 in the 2 hours
	// before, usually 0.48 × them"), now far more. A page whose days
	// vary widely is told of a surge its usual range alone would hold.
	HoursBefore      uint64        `json:"hours_before,omitempty"`
	HoursBeforeRatio float64       `json:"hours_before_ratio,omitempty"`
	HoursBeforeSpan  time.Duration `json:"hours_before_span,omitempty"`
	// Feeds is, for a "no data" message (KindNoData), what the tailers
	// said of the site's logs when it was sent: nil when not asked.
	Feeds *Feeds `json:"feeds,omitempty"`
}

// KindNoData is the why's kind of a message about a whole site whose
// data stopped arriving (a "no data" episode of a rule that hears drops),
// not about a page.
const KindNoData = "no_data"

// SiteWide reports whether the message is of a whole site, not a page.
func (w *Why) SiteWide() bool { return w != nil && w.Kind == KindNoData }

// What a crossing was measured against, asked here rather than of its
// kind by each sink and page: a detector added with a normal of its own
// is spoken of as one by every message without touching them.

// ByThreshold reports whether the count passed a fixed threshold (a
// threshold rule, or a crossing kept before its why had a kind): no
// normal to speak of.
func (w *Why) ByThreshold() bool { return w == nil || w.Kind == "" || w.Kind == "threshold" }

// NewPage reports whether it is a new page's first views passing its
// rule's count (a new_page rule): nothing before is its normal.
func (w *Why) NewPage() bool { return w != nil && w.Kind == "new_page" }

// AgainstNormal reports whether the page was judged against its own
// normal (spike and unusual rules, and any detector with one): not a
// threshold, a new page, or a site's data.
func (w *Why) AgainstNormal() bool { return !w.ByThreshold() && !w.NewPage() && !w.SiteWide() }

// RangeText is the usual range, short, for headlines: "expected
// 120–180"; "" when the rule has none.
func (w *Why) RangeText() string {
	if w == nil || w.High <= 0 {
		return ""
	}
	return rangeText(w.Low, w.High)
}

// BurstText is the burst a message fired on, its count and usual range:
// "20 views in 10 minutes, expected 0–3", or a drop's hours: "15 views
// in 3 hours, expected 43–103"; "" when it fired on its window's count.
func (w *Why) BurstText() string {
	if w == nil || w.Burst <= 0 || w.BurstHigh <= 0 {
		return ""
	}
	return traffic.FormatViews(w.BurstCount) + " in " + minutesText(w.Burst) + ", " + rangeText(w.BurstLow, w.BurstHigh)
}

// BurstLine is BurstText with the burst's ratio to its normal, for a
// why's "Burst" line: "20 views in 10 minutes, expected 0–3 (now 6.1×)".
func (w *Why) BurstLine() string {
	b := w.BurstText()
	if r := w.BurstRatio(); b != "" && r > 0 {
		b += " (now " + strconv.FormatFloat(r, 'f', 1, 64) + "×)"
	}
	return b
}

// BurstRatio is the burst's count against its normal (0: none, or a
// normal of 0).
func (w *Why) BurstRatio() float64 {
	if w == nil || w.Burst <= 0 || w.BurstBaseline <= 0 {
		return 0
	}
	return math.Round(float64(w.BurstCount)/w.BurstBaseline*100) / 100
}

func minutesText(d time.Duration) string {
	m := int(d / time.Minute)
	switch {
	case m == 1:
		return "1 minute"
	case m == 60:
		return "1 hour"
	case m > 60 && m%60 == 0:
		return strconv.Itoa(m/60) + " hours"
	}
	return strconv.Itoa(m) + " minutes"
}

// BurstLabel names BurstLine for a why's list of facts: "Fired on
// burst", or for a drop heard on its hours together "Fired on hours".
func (w *Why) BurstLabel() string {
	if w != nil && w.Direction == "down" {
		return "Fired on hours"
	}
	return "Fired on burst"
}

func rangeText(low, high float64) string {
	// Grouped as the count beside it is: "16,343 views in 1h, expected
	// 4,716–10,475", not "4716–10475".
	return "expected " + traffic.FormatCount(uint64(max(0, math.Floor(low)))) + "–" + traffic.FormatCount(uint64(max(0, math.Ceil(high))))
}

// RaisedText is the level a page that rose for good was judged at, to a
// tenth: "2.6×"; "" when none.
func (w *Why) RaisedText() string {
	if w == nil || w.Raised <= 0 {
		return ""
	}
	return strconv.FormatFloat(math.Round(w.Raised*10)/10, 'f', -1, 64) + "×"
}

// LevelWent is how a page came to the level it is judged at, for its
// messages: "rose" to one over its normal before, "fell" to one under.
func (w *Why) LevelWent() string {
	if w != nil && w.Raised > 0 && w.Raised < 1 {
		return "fell"
	}
	return "rose"
}

// LevelStayed is where a page at a level had stayed: "up" or "down".
func (w *Why) LevelStayed() string {
	if w.LevelWent() == "fell" {
		return "down"
	}
	return "up"
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
		s += ", from " + strconv.Itoa(w.Days/7) + " weeks of history (same weekday)" + trendText(w.Trend)
	case w.Days == 1:
		s += ", from 1 day of history"
	case w.Days > 0:
		s += ", from " + strconv.Itoa(w.Days) + " days of history"
	}
	if w.Clock != "" {
		s += ", on " + w.Clock + " time (its readers' clocks)"
	}
	if w.Raised > 0 && !w.LevelEnded && !w.NewNormal {
		// A page that rose for good is judged at its new level.
		s += ", at the level it " + w.LevelWent() + " to on " + w.RaisedSince.UTC().Format("2 Jan") + " (" + w.RaisedText() + " its normal before)"
	}
	if w.Burst > 0 && w.BurstText() == "" {
		// A job from before bursts carried their count: the minutes only.
		s += "; fired on a burst of " + minutesText(w.Burst)
	}
	if h := w.LastedText(); h != "" {
		s += "; above it " + h
	}
	if l := w.LaunchText(); l != "" {
		s += "; " + l
	}
	if b := w.BurstsText(); b != "" {
		s += "; " + b
	}
	return s
}

// BurstsText says a page whose bursts are its normal was told against
// them: "its bursts are its normal: past what its 12 bursts in 4
// weeks reach (412 views)"; "" for any other message.
func (w *Why) BurstsText() string {
	if w == nil || w.Bursts <= 0 {
		return ""
	}
	return "its bursts are its normal: past what its " + strconv.Itoa(w.Bursts) + " bursts in 4 weeks reach (" +
		traffic.FormatViews(w.BurstsPassed) + ")"
}

// LaunchText says a new page was told in its launch, against its site's
// launches: "a new page, larger than all but one of its site's launches
// in 4 weeks (the second largest: 286 views)"; "" for any other message.
func (w *Why) LaunchText() string {
	switch {
	case w == nil || !w.Launch:
		return ""
	case w.Lasted > 0:
		return "a new page" // LastedText says what it outlasted
	case w.LaunchPassed == 0:
		return "a new page, among its site's first launches in 4 weeks"
	}
	if w.LaunchRank > 2 {
		return "a new page, larger than 19 in 20 of its site's launches in 4 weeks (the " + Ordinal(w.LaunchRank) + " largest: " +
			strconv.FormatUint(w.LaunchPassed, 10) + " views)"
	}
	return "a new page, larger than all but one of its site's launches in 4 weeks (the second largest: " +
		strconv.FormatUint(w.LaunchPassed, 10) + " views)"
}

// Ordinal is n in English: "2nd", "11th", "23rd".
func Ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}

// LastedText says a page was heard by outlasting its usual bursts: "for
// 2 h 40 min, longer than its usual bursts (1 h 40 min)"; "" for any
// other message.
func (w *Why) LastedText() string {
	if w == nil || w.Lasted <= 0 {
		return ""
	}
	if w.Launch {
		return "for " + SpanText(w.Lasted) + ", longer than its site's launches (" + SpanText(w.BurstsLast) + ")"
	}
	return "for " + SpanText(w.Lasted) + ", longer than its usual bursts (" + SpanText(w.BurstsLast) + ")"
}

// SpanText is a duration in hours and minutes: "2 h 50 min", "45 min".
func SpanText(d time.Duration) string {
	m := int(d.Round(time.Minute) / time.Minute)
	switch {
	case m < 60:
		return strconv.Itoa(m) + " min"
	case m%60 == 0:
		return strconv.Itoa(m/60) + " h"
	}
	return strconv.Itoa(m/60) + " h " + strconv.Itoa(m%60) + " min"
}

// trendText is ", rising 9 % a week" for a normal carried forward by the
// page's trend, "" for one under half a percent a week.
func trendText(g float64) string {
	pct := math.Round(math.Abs(g) * 100)
	switch {
	case pct == 0:
		return ""
	case g > 0:
		return ", rising " + strconv.FormatFloat(pct, 'f', 0, 64) + " % a week"
	default:
		return ", falling " + strconv.FormatFloat(pct, 'f', 0, 64) + " % a week"
	}
}

// BeforeText is what a surge heard against its hours before was
// measured against: "806 views in the 2 hours before, where it is
// usually 0.48 × them (now 0.9 ×)"; "" when it was not.
func (w *Why) BeforeText() string {
	if w == nil || w.HoursBefore == 0 || w.HoursBeforeSpan <= 0 {
		return ""
	}
	now := float64(w.Count) / float64(w.HoursBefore)
	return traffic.FormatViews(w.HoursBefore) + " in the " + minutesText(w.HoursBeforeSpan) + " before, where it is usually " +
		strconv.FormatFloat(w.HoursBeforeRatio, 'f', 2, 64) + " × them (now " + strconv.FormatFloat(now, 'f', 2, 64) + " ×)"
}
