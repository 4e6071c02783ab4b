// Command console serves pagewatch's web console: the live view, rules,
// a page's chart, the history, dead letters and the pipeline.
package main

import (
	"context"
	"os"
	"sync"

	"github.com/pagewatch/pagewatch/config/consoleconf"
	"github.com/pagewatch/pagewatch/config/file"
	"github.com/pagewatch/pagewatch/console"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/pipeline/silence"
	"github.com/pagewatch/pagewatch/pipeline/sweep"
)

var program = daemon.Program[consoleconf.Config]{Defaults: consoleconf.Default,
	Name: "console",
	Description: `console serves the web console on console.listen (docs/console.md): what
is taking off now against each page's normal (live, by server-sent events),
every rule with its pages nearest the threshold, a page's views per minute or
hour with the rules' thresholds drawn, the history of crossings and
notifications, dead letters to retry or discard (operators only), the
pipeline's lag, and the silences; a JSON API under /api/v1 behind each page.
Logins are users with bcrypt password hashes and bearer tokens
(console.users, console.tokens); console.auth: none is allowed on loopback
only. It reads ClickHouse and NATS, and the sweeper's rules (sweeper.rules,
sweeper.rules_path), read again on SIGHUP.`,
	Default: "run",
	Commands: []daemon.Command[consoleconf.Config]{
		{Name: "run", Part: file.Console, Listen: func(c consoleconf.Config) string { return c.Console.AdminListen }, Summary: "serve the console", Run: run},
	},
}

func main() { os.Exit(daemon.Exec(program)) }

func run(ctx context.Context, env *daemon.Env[consoleconf.Config]) error {
	b, err := env.NATS(ctx)
	if err != nil {
		return err
	}
	ch, err := env.ClickHouse(ctx)
	if err != nil {
		return err
	}
	loaded, err := sweep.LoadRules(env.Config.Sweeper)
	if err != nil {
		return &daemon.UsageError{Err: err}
	}
	var (
		mu      sync.Mutex
		current = loaded
	)
	env.OnReload([]string{"sweeper"}, func(c consoleconf.Config) error {
		rs, err := sweep.LoadRules(c.Sweeper)
		if err != nil {
			return err
		}
		mu.Lock()
		current = rs
		mu.Unlock()
		env.Logger.Info("rules reloaded", "rules", len(rs))
		return nil
	})
	silences, err := silence.Open(ctx, b, env.Logger)
	if err != nil {
		return err
	}
	now, err := env.Clock()
	if err != nil {
		return err
	}
	n := console.NewNATS(b)
	srv, err := console.New(env.Config.Console, console.Deps{
		Store: ch.Console(), Minutes: ch.Counts(), DeadLetters: n, Pipeline: n, RuleStates: n, Silences: silences,
		Revocations: console.NewRevocations(b, env.Config.Console.SessionTTL),
		Rules: func() []rules.Rule {
			mu.Lock()
			defer mu.Unlock()
			return current
		},
		Logger: env.Logger, Registry: env.Registry, Now: now,
	})
	if err != nil {
		return err
	}
	if err := srv.Listen(); err != nil {
		return err
	}
	return env.Serve(ctx, srv)
}
