package console

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// The page chart's episodes: each crossing of the page drawn on the line
// at its time as what it was (an episode firing, escalating, resolving),
// labelled with why (crossing_whys) and named in the legend.

// WhyStore reads why crossings were made. It is apart from Store, and
// optional: a store without it (an older one, a test's) labels the
// episodes from the crossings alone.
type WhyStore interface {
	Whys(ctx context.Context, keys []string) (map[string]crossing.Why, error)
}

// markView is one crossing marked on the page chart, for its legend.
type markView struct {
	Event string `json:"event"` // fire, escalate or resolve
	Short string `json:"short"` // drawn beside the mark: "fire", "escalate ×3"
	Label string `json:"label"` // the legend's line
}

// eventOfKey is the crossing's event, from its key: the sweep names an
// episode's crossings "<episode>", "<episode>.x<step>" and
// "<episode>.resolved" (rules.Rule.firings), and a threshold crossing is
// a firing.
func eventOfKey(key string) string {
	last := key[strings.LastIndexByte(key, '.')+1:]
	switch {
	case last == "resolved":
		return "resolve"
	case len(last) > 1 && last[0] == 'x' && strings.Trim(last[1:], "0123456789.") == "":
		return "escalate"
	}
	return "fire"
}

// whysOf reads the crossings' whys if the store keeps them.
func (s *frame) whysOf(ctx context.Context, xs []crossingView) (map[string]crossing.Why, error) {
	ws, ok := s.deps.Store.(WhyStore)
	if !ok || len(xs) == 0 {
		return nil, nil
	}
	keys := make([]string, len(xs))
	for i, x := range xs {
		keys[i] = x.Key
	}
	return ws.Whys(ctx, keys)
}

// markOf is how the chart marks a crossing: its event, a word or two
// beside the mark, and a line for the legend.
func markOf(x crossingView, why *crossing.Why) markView {
	ev := eventOfKey(x.Key)
	m := markView{Event: ev, Short: ev}
	views := traffic.FormatCount(x.Count) + " views in " + x.Window
	switch {
	case why.ByThreshold():
		// As the history has always named them.
		m.Label = fmt.Sprintf("%s crossed at %s: %s", x.Rule, x.Shown, views)
	case ev == "resolve" && why.LevelEnded:
		m.Label = fmt.Sprintf("%s resolved at %s: back to its old level, %s", x.Rule, x.Shown, views)
	case ev == "resolve" && why.NewNormal && why.Raised > 0:
		m.Label = fmt.Sprintf("%s resolved at %s: not back, %s, a new level at %s its normal", x.Rule, x.Shown, views, why.RaisedText())
	case ev == "resolve" && why.NewNormal:
		m.Label = fmt.Sprintf("%s resolved at %s: not back, %s, its normal followed it", x.Rule, x.Shown, views)
	case ev == "resolve":
		m.Label = fmt.Sprintf("%s resolved at %s: back to %s", x.Rule, x.Shown, views)
		if why.Peak > 0 {
			m.Label += ", peak " + traffic.FormatCount(why.Peak)
		}
	case ev == "escalate":
		if why.Step > 0 {
			m.Short = "escalate ×" + strconv.FormatFloat(why.Step, 'g', -1, 64)
		}
		m.Label = fmt.Sprintf("%s escalated at %s: %s%s", x.Rule, x.Shown, views, usualText(why))
	default:
		m.Label = fmt.Sprintf("%s fired at %s: %s%s", x.Rule, x.Shown, views, usualText(why))
	}
	return m
}

// judgedText is what a crossing was judged against, for the crossings
// tables: a threshold rule's level ("more than 1,000"), or, for a rule
// with a normal, the episode's step and the page's usual range ("above
// usual 80–140", "below usual 300–420", "escalated ×4, usual 80–140",
// "resolved, peak 2,300"). A crossing whose why is not kept (an older
// store's) says what its key says.
func judgedText(x crossingView, why *crossing.Why) string {
	if why.SiteWide() {
		// A site's "no data": when its gap began, and what its tailers
		// said of its logs.
		since := why.Since.UTC().Format("15:04 UTC, 2 Jan")
		if eventOfKey(x.Key) == "resolve" {
			return "data again, none since " + since
		}
		if l := why.Feeds.Text(); l != "" {
			return "no data since " + since + "; " + l
		}
		return "no data since " + since
	}
	if why.ByThreshold() {
		if x.Threshold == 0 {
			return eventOfKey(x.Key) // an episode's crossing, its why not kept
		}
		return "more than " + traffic.FormatCount(x.Threshold)
	}
	usual := strings.TrimPrefix(usualText(why), ", ")
	switch eventOfKey(x.Key) {
	case "resolve":
		switch {
		case why.LevelEnded:
			return "resolved, back at its old level"
		case why.NewNormal && why.Raised > 0:
			return "resolved, not back: a new level at " + why.RaisedText() + " its normal"
		case why.NewNormal:
			return "resolved, not back: its normal followed it"
		}
		if why.Peak > 0 {
			return "resolved, peak " + traffic.FormatCount(why.Peak)
		}
		return "resolved"
	case "escalate":
		out := "escalated"
		if why.Step > 0 {
			out += " ×" + strconv.FormatFloat(why.Step, 'g', -1, 64)
		}
		if usual != "" {
			out += ", " + usual
		}
		return out
	}
	side := "above"
	if why.Direction == "down" {
		side = "below"
	}
	if usual == "" {
		return side + " its normal"
	}
	return side + " " + usual
}

// withJudged sets each crossing's Judged and SiteWide from its why.
func withJudged(xs []crossingView, whys map[string]crossing.Why) {
	for i := range xs {
		var why *crossing.Why
		if w, ok := whys[xs[i].Key]; ok {
			why = &w
		}
		xs[i].Judged = judgedText(xs[i], why)
		// Without its why (an older store's), a crossing of no page is
		// still the site's: a link to it would be a /page without a path.
		xs[i].SiteWide = why.SiteWide() || xs[i].Path == ""
	}
}

// usualText is what the crossing was judged against: ", usual 80–140",
// or the spike rule's normal and ratio.
func usualText(w *crossing.Why) string {
	s := normalText(w)
	switch {
	case w.Launch && w.Lasted > 0:
		s += ", a new page" // outlasting its site's launches, as normalText says
	case w.Launch && w.LaunchPassed > 0 && w.LaunchRank > 2:
		s += ", a new page past 19 in 20 of its site's launches (" + crossing.Ordinal(w.LaunchRank) + " largest " + traffic.FormatCount(w.LaunchPassed) + ")"
	case w.Launch && w.LaunchPassed > 0:
		// Judged against its site's launches, not its own nothing.
		s += ", a new page past all but one of its site's launches (2nd largest " + traffic.FormatCount(w.LaunchPassed) + ")"
	case w.Launch:
		s += ", a new page among its site's first launches"
	case w.Bursts > 0:
		s += ", past what its " + strconv.Itoa(w.Bursts) + " bursts reach (" + traffic.FormatCount(w.BurstsPassed) + ")"
	}
	if w.Raised > 0 && !w.LevelEnded && !w.NewNormal && s != "" {
		// Its range is at the level it rose to, which its chart a month
		// back does not show.
		s += ", at its new level (" + w.RaisedText() + " its old)"
	}
	return s
}

// normalText is usualText's part of the page's own normal.
func normalText(w *crossing.Why) string {
	switch {
	case w.High > 0 && w.BurstHigh > 0 && w.Burst > 0:
		// Fired on a burst the hour may not show: say the burst's too.
		what := "a burst of "
		if w.Direction == "down" {
			what = "its hours: " // a drop heard on its hours together
		}
		return ", usual " + rangeText(w.Low, w.High) + "; " + what + traffic.FormatCount(w.BurstCount) +
			" in " + crossing.SpanText(w.Burst) + ", usual " + rangeText(w.BurstLow, w.BurstHigh)
	case w.High > 0 && w.Lasted > 0:
		// Heard under its usual bursts' count: say for how long.
		return ", usual " + rangeText(w.Low, w.High) + " " + w.LastedText()
	case w.High > 0 && w.HoursBefore > 0:
		// Heard against its hours before: say those.
		return ", usual " + rangeText(w.Low, w.High) + "; after " + w.BeforeText()
	case w.High > 0:
		return ", usual " + rangeText(w.Low, w.High)
	case w.Baseline > 0 && w.Ratio > 0:
		return fmt.Sprintf(", normal %s (%s×)", traffic.FormatCount(uint64(math.Round(w.Baseline))), formatRate(w.Ratio))
	case w.Baseline > 0:
		return ", normal " + traffic.FormatCount(uint64(math.Round(w.Baseline)))
	}
	return ""
}
