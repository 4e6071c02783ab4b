package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pagewatch/pagewatch/config"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/pipeline/pageview"
	"github.com/pagewatch/pagewatch/pipeline/sweep"
)

// ruleSource reads the rules again from the config file and rules path.
type ruleSource struct{ env *daemon.Env }

func (s ruleSource) Load() ([]rules.Rule, error) {
	cfg := s.env.Config
	if s.env.ConfigPath != "" {
		var err error
		if cfg, err = config.Load(s.env.ConfigPath); err != nil {
			return nil, err
		}
	}
	return sweep.LoadRules(cfg.Sweeper)
}

func (s ruleSource) Files() []string {
	var files []string
	if s.env.ConfigPath != "" {
		files = append(files, s.env.ConfigPath)
	}
	more, _ := sweep.RuleFiles(s.env.Config.Sweeper.RulesPath)
	return append(files, more...)
}

func newSweeper(ctx context.Context, env *daemon.Env) (*sweep.Sweeper, error) {
	rs, err := sweep.LoadRules(env.Config.Sweeper)
	if err != nil {
		return nil, &daemon.UsageError{Err: fmt.Errorf("invalid rules:\n%w", err)}
	}
	for _, w := range unmatchablePaths(env, rs) {
		env.Logger.Warn(w)
	}
	b, err := env.NATS(ctx)
	if err != nil {
		return nil, err
	}
	ch, err := env.ClickHouse(ctx)
	if err != nil {
		return nil, err
	}
	return sweep.New(ctx, env.Config.Sweeper, rs, sweep.Deps{
		Bus: b, Counts: ch.Counts(), History: ch.History(), Explain: ch.Traffic(), Rules: ruleSource{env},
		Logger: env.Logger, Registry: env.Registry,
	})
}

func run(ctx context.Context, env *daemon.Env) error {
	s, err := newSweeper(ctx, env)
	if err != nil {
		return err
	}
	if once {
		defer s.Close(ctx)
		return s.Sweep(ctx)
	}
	// The sweeper reads its rules again itself (ruleSource), from the
	// file and rules_path, and counts the result.
	env.OnReload([]string{"sweeper.rules", "sweeper.rules_path"}, func(config.Config) error {
		s.TriggerReload()
		return nil
	})
	return env.Serve(ctx, s)
}

func check(_ context.Context, env *daemon.Env) error {
	rs, err := sweep.LoadRules(env.Config.Sweeper)
	if err != nil {
		return &daemon.UsageError{Err: fmt.Errorf("invalid rules:\n%w", err)}
	}
	w := tabwriter.NewWriter(env.Stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(w, "RULE\tSITE\tMATCH\tAGGREGATE\tTHRESHOLD\tWINDOW\tRECIPIENTS")
	for _, r := range rs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Site, describeMatch(r.Match), r.Aggregate,
			thresholds(r.Thresholds), r.Window, strings.Join(r.Notify.Recipients, ","))
	}
	w.Flush()
	for _, w := range unmatchablePaths(env, rs) {
		fmt.Fprintln(env.Stdout, "warning:", w)
	}
	fmt.Fprintf(env.Stdout, "%d rule(s) valid\n", len(rs))
	return nil
}

// unmatchablePaths names the rules whose exact path ingest would never
// record as written: pages are stored normalised by ingest.tail.pages
// (case folded, trailing slash stripped, escapes normalised), so
// "/Pricing/" can match nothing when lowercase and strip are on.
func unmatchablePaths(env *daemon.Env, rs []rules.Rule) []string {
	n, err := pageview.New(env.Config.Ingest.Tail.Pages)
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

func dryRun(ctx context.Context, env *daemon.Env) error {
	s, err := newSweeper(ctx, env)
	if err != nil {
		return err
	}
	xs, err := s.DryRun(ctx)
	if err != nil {
		return err
	}
	printCrossings(env.Stdout, xs)
	fmt.Fprintf(env.Stdout, "%d crossing(s) would fire now (nothing was recorded)\n", len(xs))
	return nil
}

func backtest(ctx context.Context, env *daemon.Env) error {
	if format != "text" && format != "json" {
		return &daemon.UsageError{Err: fmt.Errorf("--format: want text or json, got %q", format)}
	}
	var (
		xs   []crossing.Crossing
		from time.Time
		err  error
	)
	if counts != "" {
		xs, from, err = backtestFile(ctx, env)
	} else {
		xs, from, err = backtestStored(ctx, env)
	}
	if err != nil {
		return err
	}
	if format == "json" {
		return printJSON(env.Stdout, xs)
	}
	printCrossings(env.Stdout, xs)
	perRule := map[string]int{}
	for _, x := range xs {
		perRule[x.Rule]++
	}
	fmt.Fprintf(env.Stdout, "since %s: %d crossing(s)", from.UTC().Format(time.RFC3339), len(xs))
	for _, rule := range slices.Sorted(maps.Keys(perRule)) {
		fmt.Fprintf(env.Stdout, "; %s %d", rule, perRule[rule])
	}
	fmt.Fprintln(env.Stdout)
	return nil
}

func backtestStored(ctx context.Context, env *daemon.Env) ([]crossing.Crossing, time.Time, error) {
	s := since
	if s == "" {
		s = "7d"
	}
	from, err := parseSince(s, time.Now())
	if err != nil {
		return nil, from, &daemon.UsageError{Err: fmt.Errorf("--since: %w", err)}
	}
	sw, err := newSweeper(ctx, env)
	if err != nil {
		return nil, from, err
	}
	xs, err := sw.Backtest(ctx, from)
	return xs, from, err
}

// backtestFile replays a counts file: the history ends with its last row.
func backtestFile(ctx context.Context, env *daemon.Env) ([]crossing.Crossing, time.Time, error) {
	rs, err := sweep.LoadRules(env.Config.Sweeper)
	if err != nil {
		return nil, time.Time{}, &daemon.UsageError{Err: fmt.Errorf("invalid rules:\n%w", err)}
	}
	f, err := os.Open(counts)
	if err != nil {
		return nil, time.Time{}, &daemon.UsageError{Err: fmt.Errorf("--counts: %w", err)}
	}
	defer f.Close()
	cf, err := sweep.ReadCounts(bufio.NewReaderSize(f, 1<<20), counts)
	if err != nil {
		return nil, time.Time{}, &daemon.UsageError{Err: fmt.Errorf("--counts: %w", err)}
	}
	now := cf.Last.Add(time.Minute)
	from := cf.First
	if since != "" {
		if from, err = parseSince(since, now); err != nil {
			return nil, from, &daemon.UsageError{Err: fmt.Errorf("--since: %w", err)}
		}
	}
	xs, err := sweep.Backtest(ctx, cf, rs, from, now, env.Logger)
	return xs, from, err
}

// backtestLine is one crossing of a backtest as --format json prints it.
type backtestLine struct {
	Rule     string    `json:"rule"`
	Site     string    `json:"site"`
	Path     string    `json:"path"`
	FiredAt  time.Time `json:"fired_at"`
	Kind     string    `json:"kind"` // fire, escalate or resolve
	Count    uint64    `json:"count"`
	Baseline *float64  `json:"baseline"` // null for threshold rules
	// Expected, Low and High are the page's normal and its usual range
	// (unusual rules; expected is the baseline for spike rules); Direction
	// is up or down for rules with a normal.
	Expected  *float64 `json:"expected,omitempty"`
	Low       *float64 `json:"low,omitempty"`
	High      *float64 `json:"high,omitempty"`
	Direction string   `json:"direction,omitempty"`
	Key       string   `json:"key"`
}

func printJSON(out io.Writer, xs []crossing.Crossing) error {
	enc := json.NewEncoder(out)
	for _, x := range xs {
		l := backtestLine{Rule: x.Rule, Site: x.Site, Path: x.Path, FiredAt: x.CrossedAt.UTC(), Kind: x.Event, Count: x.Count, Key: x.Key}
		if l.Kind == "" {
			l.Kind = string(rules.EventFire)
		}
		if x.Why != nil && x.Why.Kind != string(rules.KindThreshold) {
			b := x.Why.Baseline
			l.Baseline, l.Expected, l.Direction = &b, &b, x.Why.Direction
			if x.Why.High > 0 {
				lo, hi := x.Why.Low, x.Why.High
				l.Low, l.High = &lo, &hi
			}
		}
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	return nil
}

func migrate(ctx context.Context, env *daemon.Env) error {
	env.Config.ClickHouse.Migrate = false // applied here, with a report
	ch, err := env.ClickHouse(ctx)
	if err != nil {
		return err
	}
	n, err := ch.Migrate(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "applied %d migration(s)\n", n)
	return nil
}

func printCrossings(out io.Writer, xs []crossing.Crossing) {
	w := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
	fmt.Fprintln(w, "CROSSED AT\tRULE\tSITE\tPATH\tTHRESHOLD\tCOUNT\tWINDOW\tKEY")
	for _, x := range xs {
		// %q: paths are written by strangers and this is a terminal.
		fmt.Fprintf(w, "%s\t%s\t%q\t%q\t%d\t%d\t%s\t%s\n", x.CrossedAt.UTC().Format(time.RFC3339), x.Rule, x.Site, x.Path, x.Threshold, x.Count, x.Window, x.Key)
	}
	w.Flush()
}

// parseSince reads "7d", "36h" or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf(`want a duration ("7d", "36h") or an RFC 3339 time, got %q`, s)
	}
	return now.Add(-d), nil
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
