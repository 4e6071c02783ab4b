// Command worker delivers notification jobs to their receivers, one page at a time.
package main

import (
	"context"
	"os"

	"github.com/pagewatch/pagewatch/config/file"
	"github.com/pagewatch/pagewatch/config/workerconf"
	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/pipeline/links"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/pipeline/silence"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

var program = daemon.Program[workerconf.Config]{Defaults: workerconf.Default,
	Name: "worker",
	Description: `worker takes notification jobs from the JetStream work queue and sends
each threshold crossing once to each receiver the routing names (email,
signed webhooks, Slack, Teams, Discord, Telegram, ntfy; docs/receivers.md), except
what a silence matches or quiet hours hold. Run as many as you like: a per-page lease
in NATS KV keeps two workers off the same page (a job for a locked page is
deferred, not failed; a dead worker's lease lapses within worker.lock_ttl),
and a ledger per (crossing, receiver) keeps a redelivered job from sending
twice. Mail goes over SMTP (mail.transport: smtp) or into .eml files
(mail.transport: file). The silences' JSON API is on the admin listener
at /api/v1/silences; with worker.links set, mails carry unsubscribe and
snooze links, served there under /links/. It also sends the scheduled
reports (reports:, docs/reports.md).`,
	Default: "run",
	Commands: []daemon.Command[workerconf.Config]{
		{Name: "run", Part: file.Worker, Listen: func(c workerconf.Config) string { return c.Worker.Listen }, Summary: "consume notification jobs and send them to their receivers", Run: run},
		silenceCommand(),
		reportCommand(),
		{Name: "unsubscribes", Args: "list|remove <rule> <address>", Part: file.Worker, Run: unsubscribes,
			Summary: "list the addresses unsubscribed from rules through email links, or take one back"},
	},
}

func main() { os.Exit(daemon.Exec(program)) }

func run(ctx context.Context, env *daemon.Env[workerconf.Config]) error {
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
	env.OnReload([]string{"mail"}, func(c workerconf.Config) error { return settings.Set(c.Mail) })
	env.Ready("mail", settings.Probe)
	specs, err := receiverSpecs(env, settings)
	if err != nil {
		return err
	}
	// One set of stores, shared by the worker and its HTTP APIs.
	silences, unsubs := silence.New(b, env.Logger), links.NewUnsubscribes(b)
	api := silence.RequireToken(env.Config.Worker.APIToken.Reveal(), silence.API(silences, nil))
	env.Handle(silence.APIPrefix, api)
	env.Handle(silence.APIPrefix+"/", api)
	if signer := links.NewSigner(env.Config.Worker.Links); signer != nil {
		linksAPI := &links.API{Signer: signer, Unsubscribes: unsubs, Silences: silences, Logger: env.Logger}
		env.Handle(links.Prefix, linksAPI.Handler())
	}
	// One rate limiter for the crossings and the reports: both spend the
	// receivers' allowances.
	lim := notify.NewLimiter(b, env.Logger, env.Registry)
	w, err := notify.New(env.Config.Worker, notify.Deps{Limiter: lim,
		Bus: b, Receivers: specs, History: ch.History(), Stats: ch.Traffic(), Silences: silences, Unsubscribes: unsubs,
		Logger: env.Logger, Registry: env.Registry,
	})
	if err != nil {
		return err
	}
	// Reports run in the worker, not the sweeper: the worker has the
	// receivers (the mail settings, webhooks, chats) they go to.
	reports, err := reportStage(ctx, env, b, ch, settings, specs, lim)
	if err != nil {
		return err
	}
	return env.Serve(ctx, daemon.Together(w, reports))
}
