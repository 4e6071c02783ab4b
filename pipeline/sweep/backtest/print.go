package backtest

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/pipeline/pageview"
)

// PrintCrossings writes crossings as a table, as a backtest and a dry run
// show them. EVENT says fire, escalate or resolve, and which way a page
// with a normal went; AGAINST what the count was measured against: a
// threshold, or the page's usual range, and the burst of minutes or the
// drop's hours a message fired on when not its window's count.
func PrintCrossings(out io.Writer, xs []crossing.Crossing) {
	w := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
	fmt.Fprintln(w, "CROSSED AT\tRULE\tSITE\tPATH\tEVENT\tCOUNT\tWINDOW\tAGAINST\tKEY")
	for _, x := range xs {
		window := x.Window
		if x.Why.SiteWide() {
			window = "no data since " + x.Why.Since.UTC().Format(time.RFC3339)
		}
		// %q: paths are written by strangers and this is a terminal.
		fmt.Fprintf(w, "%s\t%s\t%q\t%q\t%s\t%d\t%s\t%s\t%s\n", x.CrossedAt.UTC().Format(time.RFC3339), x.Rule, x.Site, x.Path,
			eventText(x), x.Count, window, againstText(x), x.Key)
	}
	w.Flush()
}

// eventText is a crossing's event, with its direction for a page judged
// against its normal: "fire up", "resolve down"; "no data" and "data
// again" for a site's.
func eventText(x crossing.Crossing) string {
	ev := x.Event
	if ev == "" {
		ev = string(rules.EventFire)
	}
	switch {
	case x.Why.SiteWide() && ev == string(rules.EventResolve):
		return "data again"
	case x.Why.SiteWide():
		return "no data"
	case x.Why.AgainstNormal() && x.Why.Direction != "":
		return ev + " " + x.Why.Direction
	}
	return ev
}

// againstText is what the count was measured against: "threshold 1000",
// "expected 120–180", "expected 120–180; fired on 20 views in 10
// minutes, expected 0–3", "...; fired after 806 views in the 2 hours
// before, where it is usually 0.48 × them (now 0.90 ×)", a spike's
// "normal 40", a new page's "new page".
func againstText(x crossing.Crossing) string {
	w := x.Why
	switch {
	case w.SiteWide():
		return "-"
	case w.ByThreshold():
		return "threshold " + strconv.FormatUint(x.Threshold, 10)
	case w.NewPage():
		return "new page"
	}
	s := w.RangeText()
	if s == "" {
		s = "normal " + strconv.FormatFloat(w.Baseline, 'f', 0, 64)
	}
	if b := w.BurstText(); b != "" {
		s += "; fired on " + b
	}
	if b := w.BeforeText(); b != "" {
		s += "; fired after " + b
	}
	return s
}

// PrintDryRun writes what a dry run found would fire now.
func PrintDryRun(out io.Writer, xs []crossing.Crossing) {
	PrintCrossings(out, xs)
	fmt.Fprintf(out, "%d crossing(s) would fire now (nothing was recorded)\n", len(xs))
}

// PrintRules writes rules as `sweeper check` lists them: a table, the
// warnings, and how many are valid.
func PrintRules(out io.Writer, rs []rules.Rule, warnings []string) {
	w := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
	fmt.Fprintln(w, "RULE\tSITE\tMATCH\tAGGREGATE\tTHRESHOLD\tWINDOW\tRECIPIENTS")
	for _, r := range rs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Site, describeMatch(r.Match), r.Aggregate,
			thresholds(r.Thresholds), r.Window, strings.Join(r.Notify.Recipients, ","))
	}
	w.Flush()
	for _, w := range warnings {
		fmt.Fprintln(out, "warning:", w)
	}
	fmt.Fprintf(out, "%d rule(s) valid\n", len(rs))
}

// UnmatchablePaths names the rules whose exact path ingest would never
// record as written: pages are stored normalised by ingest.tail.pages
// (case folded, trailing slash stripped, escapes normalised), so
// "/Pricing/" can match nothing when lowercase and strip are on.
func UnmatchablePaths(pages pageview.Config, rs []rules.Rule) []string {
	n, err := pageview.New(pages)
	if err != nil {
		return nil // ingest's own validation reports it
	}
	var out []string
	for _, r := range rs {
		if r.Match.Exact == "" {
			continue
		}
		if p, ok := n.Path(r.Match.Exact); !ok || p != r.Match.Exact {
			out = append(out, fmt.Sprintf("rule %s: path %q is recorded by ingest as %q (ingest.tail.pages); the rule matches nothing until it names the page that way", r.Name, r.Match.Exact, p))
		}
	}
	return out
}

func describeMatch(m rules.Match) string {
	switch {
	case m.Exact != "":
		return m.Exact
	case m.Prefix != "":
		return "prefix " + m.Prefix
	case m.Glob != "":
		return "glob " + m.Glob
	}
	return "regex " + m.Regex
}

func thresholds(t rules.Thresholds) string {
	parts := make([]string, len(t))
	for i, v := range t {
		parts[i] = strconv.FormatUint(v, 10)
	}
	return strings.Join(parts, ",")
}
