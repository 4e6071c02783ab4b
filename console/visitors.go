package console

import (
	"strconv"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

// Who sent a page's hits, as the console shows it: visitors (distinct
// client keys among the views) beside views, and each client class's
// share of the hits, counted as views or not. The keys are the tailers'
// (pipeline/visitor): a keyed hash under a salt that changes every UTC
// day, so a person seen on two days is two visitors.

// noKeys is the title of a visitor count shown as "—": there were views
// but none had a client key (the tailer keys no clients).
const noKeys = "no client keys: the tailer does not count visitors"

// visitorsShown writes a visitor count beside the views it is of: "—"
// when there were views but none with a client key, where 0 would say
// nobody came.
func visitorsShown(visitors, views uint64) string {
	if visitors == 0 && views > 0 {
		return "—"
	}
	return traffic.FormatCount(visitors)
}

// addVisitors puts a page's visitors per step into its series, and
// reports whether there were any.
func addVisitors(series []seriesPoint, raw []traffic.MinuteHits, step time.Duration) bool {
	by := map[int64]uint64{}
	for _, m := range raw {
		by[m.Minute.Truncate(step).Unix()] += m.Hits
	}
	some := false
	for i := range series {
		series[i].Visitors = by[series[i].T.Unix()]
		some = some || series[i].Visitors > 0
	}
	return some
}

// classOrder is the order the page view lists the classes in (counted
// ones first, each part in this order), and their names there.
var classOrder = []struct{ name, label string }{
	{"human", "Human"}, {"ai_agent", "AI agent"}, {"unknown", "Unknown"}, {"bot", "Bot"}, {"ai_crawler", "AI crawler"},
}

// barWidth is the class bar's viewBox width.
const barWidth = 1000

// classesView is a page's hits per client class over the page view's
// range.
type classesView struct {
	Classes []classShare `json:"classes"`
	// Hits are every class's; Views those counted as views.
	Hits  uint64 `json:"hits"`
	Views uint64 `json:"views"`
	// ViewsShown and NotCountedShown say how the hits split:
	// "17 of 26 hits (65%)".
	ViewsShown      string `json:"-"`
	NotCountedShown string `json:"-"`
	// Divide is where the bar's counted part ends (0: none or all).
	Divide float64 `json:"-"`
}

// classShare is one class's part of a page's hits.
type classShare struct {
	Class string `json:"class"`
	Label string `json:"label"`
	Hits  uint64 `json:"hits"`
	// Counted are those of Hits counted as views (the tailers' count_classes).
	Counted    uint64  `json:"counted"`
	Clients    uint64  `json:"clients"` // distinct client keys
	Share      float64 `json:"share"`   // of all the page's hits, 0 to 1
	ShareShown string  `json:"share_shown"`
	// CountedShown is "views", "not counted", or "partly" when the
	// tailers' settings changed within the range or differ.
	CountedShown string `json:"counted_shown"`
	// Uncounted puts it in the bar's part not counted as views.
	Uncounted bool `json:"-"`
	// X and W are its segment of the bar, in 0..barWidth.
	X, W float64 `json:"-"`
}

// classShares builds the view of a page's class counts; nil when there
// are none (raw hits past their retention, or loaded before classes).
func classShares(counts []ClassCount) *classesView {
	if len(counts) == 0 {
		return nil
	}
	v := &classesView{}
	by := map[string]*classShare{}
	var all []*classShare
	for _, c := range classOrder {
		s := &classShare{Class: c.name, Label: c.label}
		by[c.name], all = s, append(all, s)
	}
	for _, c := range counts {
		s := by[c.Class]
		if s == nil {
			s = by["unknown"]
		}
		s.Hits += c.Hits
		s.Clients += c.Clients
		if c.Counted {
			s.Counted += c.Hits
			v.Views += c.Hits
		}
		v.Hits += c.Hits
	}
	// Counted classes first, then the rest, each in classOrder; a class
	// without hits is counted or not as it usually is (human, AI agent
	// and unknown count by default).
	counted := func(s *classShare) bool {
		if s.Hits == 0 {
			return s.Class == "human" || s.Class == "ai_agent" || s.Class == "unknown"
		}
		return s.Counted > 0
	}
	var x float64
	for _, part := range []bool{true, false} {
		for _, s := range all {
			if counted(s) != part {
				continue
			}
			s.Share = float64(s.Hits) / float64(max(v.Hits, 1))
			s.ShareShown = sharePct(s.Share)
			switch {
			case s.Hits == 0:
				s.CountedShown = "—"
			case s.Counted == s.Hits:
				s.CountedShown = "views"
			case s.Counted == 0:
				s.CountedShown = "not counted"
			default:
				s.CountedShown = "partly: " + traffic.FormatCount(s.Counted) + " views"
			}
			s.Uncounted = !part
			s.X, s.W = x, s.Share*barWidth
			x += s.W
			v.Classes = append(v.Classes, *s)
		}
		if part {
			v.Divide = x
		}
	}
	if v.Divide <= 0 || v.Divide >= barWidth-0.05 {
		v.Divide = 0
	}
	v.ViewsShown = traffic.FormatCount(v.Views) + " of " + traffic.FormatCount(v.Hits) + " hits (" + sharePct(float64(v.Views)/float64(max(v.Hits, 1))) + ")"
	v.NotCountedShown = traffic.FormatCount(v.Hits-v.Views) + " (" + sharePct(float64(v.Hits-v.Views)/float64(max(v.Hits, 1))) + ")"
	return v
}

// sharePct writes a share of 0 to 1 as a percentage: whole under 100
// and over 10, one decimal below ("0.4%"), so a small share is not 0%.
func sharePct(v float64) string {
	p := v * 100
	switch {
	case p == 0:
		return "0%"
	case p < 10:
		return strconv.FormatFloat(p, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(p, 'f', 0, 64) + "%"
}
