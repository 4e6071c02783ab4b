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
// show them.
func PrintCrossings(out io.Writer, xs []crossing.Crossing) {
	w := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
	fmt.Fprintln(w, "CROSSED AT\tRULE\tSITE\tPATH\tTHRESHOLD\tCOUNT\tWINDOW\tKEY")
	for _, x := range xs {
		window := x.Window
		if x.Why.SiteWide() {
			window = "no data since " + x.Why.Since.UTC().Format(time.RFC3339)
		}
		// %q: paths are written by strangers and this is a terminal.
		fmt.Fprintf(w, "%s\t%s\t%q\t%q\t%d\t%d\t%s\t%s\n", x.CrossedAt.UTC().Format(time.RFC3339), x.Rule, x.Site, x.Path, x.Threshold, x.Count, window, x.Key)
	}
	w.Flush()
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
