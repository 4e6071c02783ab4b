package webhook

import (
	"fmt"
	"math"
	"strings"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// whyFacts are the crossing's why as chat facts: the page's normal, its
// rank, where its views came from, who sent them, and its busiest minute. Referrer
// domains are written by strangers: cleaned like every other value, and
// each service escapes them for its markup.
func whyFacts(w *crossing.Why) []fact {
	var out []fact
	if !w.ByThreshold() {
		normal := traffic.FormatViews(uint64(math.Round(w.Baseline)))
		if e := w.ExpectedText(); e != "" {
			normal = e
		}
		if w.Ratio > 0 {
			normal += fmt.Sprintf(" (now %.1f×)", w.Ratio)
		}
		out = append(out, fact{"Normal", normal})
		if b := w.BurstLine(); b != "" {
			out = append(out, fact{w.BurstLabel(), b})
		}
		if b := w.BeforeText(); b != "" {
			out = append(out, fact{"Hours before", b})
		}
	}
	if w.Rank > 0 {
		out = append(out, fact{"Rank on site", fmt.Sprintf("%d of %s pages", w.Rank, traffic.FormatCount(uint64(w.RankOf)))})
	}
	if len(w.Referrers) > 0 {
		var parts []string
		for _, r := range w.Referrers[:min(len(w.Referrers), 3)] {
			parts = append(parts, fmt.Sprintf("%s %.0f%% (before %.0f%%)", clean(r.Domain, 100), 100*r.Share, 100*r.BaselineShare))
		}
		out = append(out, fact{"Referrers", clean(strings.Join(parts, ", "), maxLine)})
	}
	if len(w.NewReferrers) > 0 {
		var names []string
		for _, d := range w.NewReferrers[:min(len(w.NewReferrers), 5)] {
			names = append(names, clean(d, 100))
		}
		out = append(out, fact{"New referrers", clean(strings.Join(names, ", "), maxLine)})
	}
	// Who sent the views: numbers and class names only, nothing a
	// stranger wrote.
	if v := w.Clients.Text(); v != "" || w.Clients.MostlyText() != "" {
		if m := w.Clients.MostlyText(); m != "" {
			v = strings.TrimPrefix(v+" ("+m+")", " ")
		}
		out = append(out, fact{"Visitors", v})
	}
	if c := w.Clients.ClassesText(); c != "" {
		out = append(out, fact{"Clients", c})
	}
	if !w.BusiestMinute.IsZero() {
		out = append(out, fact{"Busiest minute", w.BusiestMinute.UTC().Format("15:04 UTC") + ", " + traffic.FormatViews(w.BusiestHits)})
	}
	return out
}
