package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/config/file"
	"github.com/pagewatch/pagewatch/config/sweeperconf"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/pipeline/sweep"
	"github.com/pagewatch/pagewatch/pipeline/sweep/backtest"
	"github.com/pagewatch/pagewatch/pipeline/tail/tailstatus"
)

// ruleSource reads the rules again from the config file and rules path.
type ruleSource struct {
	env *daemon.Env[sweeperconf.Config]
}

func (s ruleSource) Load() ([]rules.Rule, error) {
	cfg := s.env.Config
	if s.env.ConfigPath != "" {
		var err error
		if cfg, err = file.Load(s.env.ConfigPath, sweeperconf.Default()); err != nil {
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

// loadRules loads the configured rules; invalid ones are a usage error.
func loadRules(env *daemon.Env[sweeperconf.Config]) ([]rules.Rule, error) {
	rs, err := sweep.LoadRules(env.Config.Sweeper)
	if err != nil {
		return nil, &daemon.UsageError{Err: fmt.Errorf("invalid rules:\n%w", err)}
	}
	return rs, nil
}

// ruleWarnings: rules that match nothing as ingest records paths, and
// settings known to misjudge (rules.Advice). Said at start and by check,
// not on a reload.
func ruleWarnings(env *daemon.Env[sweeperconf.Config], rs []rules.Rule) []string {
	return append(backtest.UnmatchablePaths(env.Config.Ingest.Pages, rs), adviceOf(rs)...)
}

// adviceOf is rules.Advice of each of rs.
func adviceOf(rs []rules.Rule) []string {
	var out []string
	for i := range rs {
		out = append(out, rules.Advice(&rs[i])...)
	}
	return out
}

func newSweeper(ctx context.Context, env *daemon.Env[sweeperconf.Config], wait time.Duration) (*sweep.Sweeper, error) {
	rs, err := loadRules(env)
	if err != nil {
		return nil, err
	}
	for _, w := range ruleWarnings(env, rs) {
		env.Logger.Warn(w)
	}
	b, err := connectNATS(ctx, env, wait)
	if err != nil {
		return nil, err
	}
	ch, err := env.ClickHouse(ctx)
	if err != nil {
		return nil, err
	}
	now, err := env.Clock()
	if err != nil {
		return nil, err
	}
	s, err := sweep.New(env.Config.Sweeper, rs, sweep.Deps{
		Bus: b, Counts: ch.Counts(), History: ch.History(), Explain: ch.Traffic(), Feeds: tailstatus.Feeds{Bus: b}, Rules: ruleSource{env},
		Logger: env.Logger, Registry: env.Registry,
	})
	if err != nil {
		return nil, err
	}
	s.SetClock(now)
	return s, nil
}

func run(ctx context.Context, env *daemon.Env[sweeperconf.Config], f runFlags) error {
	s, err := newSweeper(ctx, env, 0)
	if err != nil {
		return err
	}
	if f.once {
		defer s.Close(ctx)
		return s.Sweep(ctx)
	}
	// The sweeper reads its rules again itself (ruleSource), from the
	// file and rules_path, and counts the result.
	env.OnReload([]string{"sweeper.rules", "sweeper.rules_path"}, func(sweeperconf.Config) error {
		s.TriggerReload()
		return nil
	})
	return env.Serve(ctx, s)
}

func check(_ context.Context, env *daemon.Env[sweeperconf.Config]) error {
	rs, err := loadRules(env)
	if err != nil {
		return err
	}
	backtest.PrintRules(env.Stdout, rs, ruleWarnings(env, rs))
	return nil
}

func dryRun(ctx context.Context, env *daemon.Env[sweeperconf.Config]) error {
	s, err := newSweeper(ctx, env, oneShotWait)
	if err != nil {
		return err
	}
	xs, err := s.DryRun(ctx)
	if err != nil {
		return err
	}
	backtest.PrintDryRun(env.Stdout, xs)
	return nil
}

// oneShotWait bounds how long a command run by hand (dry-run, backtest
// from ClickHouse) waits for NATS: a daemon waits for its servers to come
// up, in any order, but a person at a terminal wants to be told.
const oneShotWait = 15 * time.Second

// connectNATS is env.NATS, waiting at most wait (0: as long as it takes,
// as a daemon does).
func connectNATS(ctx context.Context, env *daemon.Env[sweeperconf.Config], wait time.Duration) (*bus.Bus, error) {
	if wait <= 0 {
		return env.NATS(ctx)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	b, err := env.NATS(wctx)
	if err != nil && ctx.Err() == nil && wctx.Err() != nil {
		return nil, fmt.Errorf("%w: no answer in %s (this command connects to NATS and ClickHouse as the sweeper does; a backtest of a CSV needs neither: --counts FILE)", err, wait)
	}
	return b, err
}

// runBacktest replays the counts file (--counts), or asks the sweep for
// the stored counts since --since.
func runBacktest(ctx context.Context, env *daemon.Env[sweeperconf.Config], f backtestFlags) error {
	q := backtest.Query{Since: f.since, Counts: f.counts, Format: f.format}
	if err := q.Check(); err != nil {
		return asUsage(err)
	}
	rs, err := loadRules(env)
	if err != nil {
		return err
	}
	if len(rs) == 0 {
		// "0 crossings" from no rules reads as "nothing unusual".
		return &daemon.UsageError{Err: errors.New("no rules to replay: set sweeper.rules, or sweeper.rules_path (deploy/rules/spike-default.yaml is the recommended file), in the --config file")}
	}
	var (
		xs   []crossing.Crossing
		from time.Time
	)
	if q.Counts != "" {
		xs, from, err = backtestFile(ctx, env, q, rs)
	} else {
		xs, from, err = backtestStored(ctx, env, q, f.wait)
	}
	if err != nil {
		return asUsage(err)
	}
	return q.Print(env.Stdout, xs, from, backtest.Learnt(rs))
}

func backtestStored(ctx context.Context, env *daemon.Env[sweeperconf.Config], q backtest.Query, wait time.Duration) ([]crossing.Crossing, time.Time, error) {
	from, err := q.From(time.Now())
	if err != nil {
		return nil, from, err
	}
	sw, err := newSweeper(ctx, env, wait)
	if err != nil {
		return nil, from, err
	}
	xs, err := sw.Backtest(ctx, from)
	return xs, from, err
}

// backtestFile replays the counts file through rs, warning of their
// settings as newSweeper does (a CSV has no ingest paths to check).
func backtestFile(ctx context.Context, env *daemon.Env[sweeperconf.Config], q backtest.Query, rs []rules.Rule) ([]crossing.Crossing, time.Time, error) {
	for _, w := range adviceOf(rs) {
		env.Logger.Warn(w)
	}
	return q.File(ctx, rs, env.Logger)
}

// asUsage makes backtest's input errors (a bad flag or counts file) the
// command's usage errors.
func asUsage(err error) error {
	var in *backtest.InputError
	if errors.As(err, &in) {
		return &daemon.UsageError{Err: err}
	}
	return err
}

func migrate(ctx context.Context, env *daemon.Env[sweeperconf.Config]) error {
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
