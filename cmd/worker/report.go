package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/config/file"
	"github.com/pagewatch/pagewatch/config/workerconf"
	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

// reportFlags are `worker report`'s flags.
type reportFlags struct {
	at   string
	send bool
}

func (f *reportFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.at, "at", "", "report: as if run at this time, RFC 3339 (default now): the period is the last whole one before it")
	fs.BoolVar(&f.send, "send", false, "report: send it to its receivers too (once per period and receiver, as the schedule does)")
}

func reportCommand() daemon.Command[workerconf.Config] {
	var f reportFlags
	return daemon.Command[workerconf.Config]{Name: "report", Args: "<name>", Part: file.Worker, Flags: f.bind,
		Run:     func(ctx context.Context, env *daemon.Env[workerconf.Config]) error { return reportCmd(ctx, env, f) },
		Summary: "print a scheduled report for the last whole period (--at a time; default now), and with --send deliver it"}
}

// reportCmd prints a configured report for the last whole period, and
// with --send delivers it.
func reportCmd(ctx context.Context, env *daemon.Env[workerconf.Config], f reportFlags) error {
	if len(env.Args) != 1 {
		return &daemon.UsageError{Err: fmt.Errorf("report: name one report (worker report <name> [--at time] [--send])")}
	}
	at := time.Now()
	if f.at != "" {
		t, err := time.Parse(time.RFC3339, f.at)
		if err != nil {
			return &daemon.UsageError{Err: fmt.Errorf("--at: %w", err)}
		}
		at = t
	}
	b, err := env.NATS(ctx)
	if err != nil {
		return err
	}
	ch, err := env.ClickHouse(ctx)
	if err != nil {
		return err
	}
	settings := mail.NewSettings(mail.DefaultConfig())
	if err := settings.Set(env.Config.Mail); err != nil {
		return err
	}
	specs, err := receiverSpecs(env, settings)
	if err != nil {
		return err
	}
	stage, err := reportStage(ctx, env, b, ch, settings, specs, notify.NewLimiter(b, env.Logger, env.Registry))
	if err != nil {
		return err
	}
	name := env.Args[0]
	r, err := stage.Build(ctx, name, at)
	if err != nil {
		return &daemon.UsageError{Err: err}
	}
	fmt.Fprintf(env.Stdout, "%s\n\n%s\n", r.Subject(), strings.Join(r.Lines(), "\n"))
	if !f.send {
		return nil
	}
	n, err := stage.Send(ctx, name, at)
	fmt.Fprintf(env.Stdout, "\nsent to %d receivers (the others had it already, or failed)\n", n)
	return err
}
