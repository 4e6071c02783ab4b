// Command worker mails notification jobs, one page at a time.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/pagewatch/pagewatch/config"
	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

var program = daemon.Program{
	Name: "worker",
	Description: `worker takes notification jobs from the JetStream work queue and sends
each threshold crossing once to each receiver the routing names (email,
signed webhooks, Slack, Teams, Discord, Telegram). Run as many as you like: a per-page lease
in NATS KV keeps two workers off the same page (a job for a locked page is
deferred, not failed; a dead worker's lease lapses within worker.lock_ttl),
and a sent ledger keeps a redelivered job from mailing twice. Mail goes
over SMTP (mail.transport: smtp) or into .eml files (mail.transport: file).`,
	Default: "run",
	Commands: []daemon.Command{
		{Name: "run", Part: config.Worker, Listen: func(c config.Config) string { return c.Worker.Listen }, Summary: "consume notification jobs and send mail", Run: run},
	},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	os.Exit(daemon.Main(ctx, program, os.Args[1:], os.Stdout, os.Stderr, hup))
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
	// Set fails at start, not at the first job, on a bad mail setup; on
	// SIGHUP it takes a new mail section (a rotated password, say).
	settings := mail.NewSettings(mail.DefaultConfig())
	if err := settings.Set(env.Config.Mail); err != nil {
		return err
	}
	env.OnReload([]string{"mail"}, func(c config.Config) error { return settings.Set(c.Mail) })
	env.Ready("mail", settings.Probe)
	specs, err := receiverSpecs(env, settings)
	if err != nil {
		return err
	}
	w, err := notify.New(ctx, env.Config.Worker, notify.Deps{
		Bus: b, Receivers: specs, History: ch, Stats: ch,
		Logger: env.Logger, Registry: env.Registry,
	})
	if err != nil {
		return err
	}
	return env.Serve(ctx, w)
}
