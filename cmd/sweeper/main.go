// Command sweeper judges every page against its rules on a cron schedule and
// enqueues one notification job per crossing.
package main

import (
	"context"
	"flag"
	"os"
	"time"

	"github.com/pagewatch/pagewatch/config/file"
	"github.com/pagewatch/pagewatch/config/sweeperconf"
	"github.com/pagewatch/pagewatch/internal/daemon"
)

var program = daemon.Program[sweeperconf.Config]{Defaults: sweeperconf.Default,
	Name: "sweeper",
	Description: `sweeper judges every page against its rules: whether it is unusual now
("/launch is at 4.3× its normal: 640 views in 1h, expected 120–180",
"/checkout went quiet: 3 views in 3 hours, expected 140–260", each
against the normal of the page's own week: deploy/rules/spike-default.yaml,
docs/unusual-rules.md),
or passed a threshold ("/pricing had more than 1000 views in the last
1h", milestones 100/1000/10000 in all time). It records each crossing
once in ClickHouse and enqueues one notification job per crossing for
the workers; while a site's data is late it holds drops and says "no
data" once. It runs on the cron schedule in sweeper.schedule; with
--once it sweeps once and exits, for driving it from system cron. Run
two or more for availability: one leads (a lease in NATS KV) and the
others take over within sweeper.leader_ttl.

Try a rule on a series before using it: sweeper --config F backtest
--counts views.csv (a CSV as dashboards export it; no NATS or
ClickHouse needed).

Rules live in sweeper.rules and in the file or directory sweeper.rules_path.
They are read again on SIGHUP and when a rules file changes; a set with an
error is rejected whole and the previous rules stay in force.`,
	Default: "run",
	Commands: []daemon.Command[sweeperconf.Config]{
		runCommand(),
		{Name: "check", Part: file.Sweeper, Summary: "validate the config and every rule, list the rules, and exit (0 valid, 2 invalid)", Run: check},
		{Name: "dry-run", Part: file.Sweeper, Summary: "print what would fire now, recording nothing", Run: dryRun},
		backtestCommand(),
		{Name: "migrate", Part: file.Sweeper, Summary: "apply the ClickHouse schema migrations and exit", Run: migrate},
	},
}

func main() { os.Exit(daemon.Exec(program)) }

// runFlags are `sweeper run`'s flags.
type runFlags struct {
	once bool
}

func (f *runFlags) bind(fs *flag.FlagSet) {
	fs.BoolVar(&f.once, "once", false, "run: sweep once and exit")
}

func runCommand() daemon.Command[sweeperconf.Config] {
	var f runFlags
	return daemon.Command[sweeperconf.Config]{Name: "run", Part: file.Sweeper, Summary: "sweep on the configured schedule (or once, with --once)",
		Flags:  f.bind,
		Listen: func(c sweeperconf.Config) string { return listen(c, f) },
		Run:    func(ctx context.Context, env *daemon.Env[sweeperconf.Config]) error { return run(ctx, env, f) },
	}
}

// listen is sweeper.listen, except with --once, which exits after a sweep.
func listen(c sweeperconf.Config, f runFlags) string {
	if f.once {
		return ""
	}
	return c.Sweeper.Listen
}

// backtestFlags are `sweeper backtest`'s flags.
type backtestFlags struct {
	since, counts, format string
	wait                  time.Duration
}

func (f *backtestFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.since, "since", "", `backtest: how far back: a duration ("7d", "36h") or an RFC 3339 time; default 7d, or with --counts the file's start (an unusual rule is replayed from 4 weeks before, unreported, to learn what its pages remember)`)
	fs.StringVar(&f.counts, "counts", "", "backtest: read counts from this CSV file (timestamp,site,path,count, or timestamp,value for one series, or columns named by a header; RFC 3339 times, 2006-01-02 15:04:05 as UTC, or Unix seconds or milliseconds; docs/spike-rules.md) instead of ClickHouse; needs neither NATS nor ClickHouse")
	fs.StringVar(&f.format, "format", "text", "backtest: text (a table and a summary) or json (one object per line)")
	fs.DurationVar(&f.wait, "wait", oneShotWait, "backtest without --counts: how long to wait for NATS before giving up (0: as long as it takes, as the daemon does)")
}

func backtestCommand() daemon.Command[sweeperconf.Config] {
	var f backtestFlags
	return daemon.Command[sweeperconf.Config]{Name: "backtest", Part: file.Sweeper, Summary: "print what would have fired since a time, per rule, from the stored counts or a counts file",
		Flags: f.bind,
		Run:   func(ctx context.Context, env *daemon.Env[sweeperconf.Config]) error { return runBacktest(ctx, env, f) },
	}
}
