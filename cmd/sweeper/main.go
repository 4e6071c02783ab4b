// Command sweeper evaluates threshold rules on a cron schedule and
// enqueues one notification job per crossing.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/pagewatch/pagewatch/config"
	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/pipeline/sweep"
)

var once bool

var program = daemon.Program{
	Name: "sweeper",
	Description: `sweeper finds the pages whose view counts crossed a rule's threshold
("/pricing had more than 1000 views in the last 1h", "/post reached 10000
views in all time"), records each crossing once in ClickHouse, and enqueues
one notification job per crossing for the workers. It runs on the cron
schedule in sweeper.schedule; with --once it sweeps once and exits, for
driving it from system cron. Rules live in sweeper.rules of the config.`,
	Default: "run",
	Commands: []daemon.Command{
		{Name: "run", Part: config.Sweeper, Summary: "sweep on the configured schedule (or once, with --once)", Run: run,
			Flags: func(fs *flag.FlagSet) { fs.BoolVar(&once, "once", false, "run: sweep once and exit") }},
		{Name: "migrate", Part: config.Sweeper, Summary: "apply the ClickHouse schema migrations and exit", Run: migrate},
	},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(daemon.Main(ctx, program, os.Args[1:], os.Stdout, os.Stderr))
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

func run(ctx context.Context, env *daemon.Env) error {
	b, err := env.NATS(ctx)
	if err != nil {
		return err
	}
	ch, err := env.ClickHouse(ctx)
	if err != nil {
		return err
	}
	s, err := sweep.New(ctx, env.Config.Sweeper, b, ch, ch, env.Logger, env.Registry)
	if err != nil {
		return err
	}
	if once {
		return s.Sweep(ctx)
	}
	return env.Serve(ctx, env.Config.Sweeper.Listen, s)
}
