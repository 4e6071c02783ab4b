// Command sweeper evaluates threshold rules on a cron schedule and
// enqueues one notification job per crossing.
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"

	"github.com/pagewatch/pagewatch/config"
	"github.com/pagewatch/pagewatch/internal/daemon"
)

var (
	once   bool
	since  string
	counts string
	format string
)

var program = daemon.Program{
	Name: "sweeper",
	Description: `sweeper finds the pages whose view counts crossed a rule's threshold
("/pricing had more than 1000 views in the last 1h", "/blog/* pages each
reaching 10000 views in a day", milestones 100/1000/10000 in all time),
records each crossing once in ClickHouse, and enqueues one notification
job per crossing for the workers. It runs on the cron schedule in
sweeper.schedule; with --once it sweeps once and exits, for driving it
from system cron. Run two or more for availability: one leads (a lease in
NATS KV) and the others take over within sweeper.leader_ttl.

Rules live in sweeper.rules and in the file or directory sweeper.rules_path.
They are read again on SIGHUP and when a rules file changes; a set with an
error is rejected whole and the previous rules stay in force.`,
	Default: "run",
	Commands: []daemon.Command{
		{Name: "run", Part: config.Sweeper, Listen: listen, Summary: "sweep on the configured schedule (or once, with --once)", Run: run,
			Flags: func(fs *flag.FlagSet) { fs.BoolVar(&once, "once", false, "run: sweep once and exit") }},
		{Name: "check", Part: config.Sweeper, Summary: "validate the config and every rule, list the rules, and exit (0 valid, 2 invalid)", Run: check},
		{Name: "dry-run", Part: config.Sweeper, Summary: "print what would fire now, recording nothing", Run: dryRun},
		{Name: "backtest", Part: config.Sweeper, Summary: "print what would have fired since a time, per rule, from the stored counts or a counts file", Run: backtest,
			Flags: func(fs *flag.FlagSet) {
				fs.StringVar(&since, "since", "", `backtest: how far back: a duration ("7d", "36h") or an RFC 3339 time; default 7d, or with --counts the file's start`)
				fs.StringVar(&counts, "counts", "", "backtest: read counts from this CSV file (timestamp,site,path,count; RFC 3339 times) instead of ClickHouse; needs neither NATS nor ClickHouse")
				fs.StringVar(&format, "format", "text", "backtest: text (a table and a summary) or json (one object per line)")
			}},
		{Name: "migrate", Part: config.Sweeper, Summary: "apply the ClickHouse schema migrations and exit", Run: migrate},
	},
}

// listen is sweeper.listen, except with --once, which exits after a sweep.
func listen(c config.Config) string {
	if once {
		return ""
	}
	return c.Sweeper.Listen
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	os.Exit(daemon.Main(ctx, program, os.Args[1:], os.Stdout, os.Stderr, hup))
}
