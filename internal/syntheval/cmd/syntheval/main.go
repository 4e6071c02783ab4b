// Command syntheval scores a rules file on generated pages of the
// classes issue #23 names and three more (package syntheval), a table
// per family, as `make eval` scores the NAB tweets.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"text/tabwriter"
	"time"

	"github.com/pagewatch/pagewatch/internal/nabeval"
	"github.com/pagewatch/pagewatch/internal/syntheval"
	"github.com/pagewatch/pagewatch/pipeline/sweep"
)

func main() {
	rulesPath := flag.String("rules", "deploy/rules/spike-default.yaml", "the rules file to score")
	verbose := flag.Bool("v", false, "also list each page's missed events and false alarms")
	dump := flag.String("dump", "", "print this page's rows (a name -v lists, like drops-3000-5m0s-1) as a counts file for `sweeper backtest --counts`, and exit")
	flag.Parse()
	if *dump != "" {
		if err := syntheval.WriteCounts(os.Stdout, *dump); err != nil {
			fmt.Fprintln(os.Stderr, "syntheval:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*rulesPath, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "syntheval:", err)
		os.Exit(1)
	}
}

func run(rulesPath string, verbose bool) error {
	rs, err := sweep.LoadRules(sweep.Config{RulesPath: rulesPath})
	if err != nil {
		return err
	}
	quiet := slog.New(slog.DiscardHandler)
	results, err := syntheval.Score(context.Background(), syntheval.Pages(), rs, quiet)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "family\tpages\tcaught\tfalse alarms\tweeks\tper week\t")
	var all []nabeval.Score
	for _, f := range syntheval.Families {
		var scores []nabeval.Score
		for _, r := range results {
			if r.Page.Family == f.Name {
				scores = append(scores, r.Score)
			}
		}
		all = append(all, scores...)
		c, n, pw := nabeval.Total(scores)
		fa := 0
		var weeks float64
		for _, s := range scores {
			fa += s.FalseAlarms
			weeks += s.Weeks
		}
		fmt.Fprintf(w, "%s\t%d\t%d/%d\t%d\t%.1f\t%.2f\t\n", f.Name, len(scores), c, n, fa, weeks, pw)
	}
	w.Flush()
	early, pages := 0, 0
	for _, r := range results {
		early += len(r.Probation)
		if len(r.Probation) > 0 {
			pages++
		}
	}
	var longest syntheval.Result
	for _, r := range results {
		if r.Longest > longest.Longest {
			longest = r
		}
	}
	fmt.Printf("longest episode (fire to resolve, or to the page's end): %.1f days, on %s\n", longest.Longest.Hours()/24, longest.Page.Name)
	fmt.Printf("in the pages' probation (a first week, or 15 %% of a shorter page), not scored above: %d false alarms on %d of %d pages\n", early, pages, len(results))
	if verbose {
		for _, r := range results {
			for _, m := range r.Detail.Missed {
				fmt.Printf("  %s missed %s .. %s\n", r.Page.Name, m[0].Format(time.DateTime), m[1].Format(time.DateTime))
			}
			for _, t := range r.Detail.FalseAlarms {
				fmt.Printf("  %s false alarm at %s (%s)\n", r.Page.Name, t.Format(time.DateTime), t.Weekday())
			}
			for _, t := range r.Probation {
				fmt.Printf("  %s false alarm in its probation at %s (%s)\n", r.Page.Name, t.Format(time.DateTime), t.Weekday())
			}
		}
	}
	var nab []nabeval.Score
	nfa := 0
	for _, r := range results {
		nab = append(nab, r.NAB)
		nfa += r.NAB.FalseAlarms
	}
	c, n, pw := nabeval.Total(nab)
	fmt.Printf("counted with NAB's probation (min(15 %%, 750 rows), real series' scoring): caught=%d/%d false_alarms=%d false_alarms_per_series_week=%.2f\n", c, n, nfa, pw)
	c, n, pw = nabeval.Total(all)
	fmt.Printf("rules %s\n", rulesPath)
	fmt.Printf("synthetic caught=%d/%d false_alarms_per_series_week=%.2f\n", c, n, pw)
	return nil
}
