// Command nabeval runs the shipped spike rules over the NAB Twitter series
// through `sweeper backtest --counts` and prints how they do, counted as
// ../shared/data/README.md says (see package nabeval). `make eval` runs it.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"text/tabwriter"

	"github.com/pagewatch/pagewatch/internal/nabeval"
)

func main() {
	data := flag.String("data", "../shared/data/nab-tweets", "the NAB series and labels.json, read in place")
	sweeper := flag.String("sweeper", "bin/sweeper", "the sweeper binary")
	rulesPath := flag.String("rules", "deploy/rules/spike-default.yaml", "the rules file to score")
	flag.Parse()
	if err := run(*data, *sweeper, *rulesPath); err != nil {
		fmt.Fprintln(os.Stderr, "nabeval:", err)
		os.Exit(1)
	}
}

func run(data, sweeper, rulesPath string) error {
	ss, err := nabeval.Load(data)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "nabeval")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	counts := filepath.Join(dir, "counts.csv")
	f, err := os.Create(counts)
	if err != nil {
		return err
	}
	if err := nabeval.WriteCounts(f, ss); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	abs, err := filepath.Abs(rulesPath)
	if err != nil {
		return err
	}
	cfg := filepath.Join(dir, "pagewatch.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("sweeper:\n  rules_path: %q\n", abs)), 0o600); err != nil {
		return err
	}
	var out, stderr bytes.Buffer
	cmd := exec.Command(sweeper, "--config", cfg, "backtest", "--counts", counts, "--format", "json")
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s backtest: %w\n%s", sweeper, err, stderr.String())
	}
	alarms, err := nabeval.ReadAlarms(&out)
	if err != nil {
		return err
	}
	var scores []nabeval.Score
	w := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "series\tcaught\t(windows in probation)\talarms\tfalse alarms\tweeks\tper week\t")
	for _, s := range ss {
		sc := nabeval.ScoreSeries(s, alarms)
		scores = append(scores, sc)
		fmt.Fprintf(w, "%s\t%d/%d\t%d\t%d\t%d\t%.1f\t%.2f\t\n", sc.Name, sc.Caught, sc.Windows, sc.InProbation, sc.Alarms, sc.FalseAlarms, sc.Weeks, float64(sc.FalseAlarms)/sc.Weeks)
	}
	w.Flush()
	caught, windows, perWeek := nabeval.Total(scores)
	inProbation := 0
	for _, sc := range scores {
		inProbation += sc.InProbation
	}
	fmt.Printf("rules %s; %d windows lie in the probationary 15%%: at most %d/%d can be caught\n", rulesPath, inProbation, windows-inProbation, windows)
	var nabCode []nabeval.Score
	for _, s := range ss {
		nabCode = append(nabCode, nabeval.ScoreSeriesAfter(s, alarms, s.NABCodeProbationEnd()))
	}
	c, n, pw := nabeval.Total(nabCode)
	fmt.Printf("with NAB's own code's probation (15%% of rows, at most 750): caught=%d/%d false_alarms_per_series_week=%.2f\n", c, n, pw)
	fmt.Printf("nab-tweets caught=%d/%d false_alarms_per_series_week=%.2f\n", caught, windows, perWeek)
	return nil
}
