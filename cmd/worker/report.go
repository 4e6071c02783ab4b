package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

// The report command's flags.
var reportFlags struct {
	at   string
	send bool
}

func reportFlagSet(fs *flag.FlagSet) {
	fs.StringVar(&reportFlags.at, "at", "", "report: as if run at this time, RFC 3339 (default now): the period is the last whole one before it")
	fs.BoolVar(&reportFlags.send, "send", false, "report: send it to its receivers too (once per period and receiver, as the schedule does)")
}

// reportCmd prints a configured report for the last whole period, and
// with --send delivers it.
func reportCmd(ctx context.Context, env *daemon.Env) error {
	if len(env.Args) != 1 {
		return &daemon.UsageError{Err: fmt.Errorf("report: name one report (worker report <name> [--at time] [--send])")}
	}
	at := time.Now()
	if reportFlags.at != "" {
		t, err := time.Parse(time.RFC3339, reportFlags.at)
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
	stage, err := reportStage(ctx, env, b, ch, settings, specs)
	if err != nil {
		return err
	}
	name := env.Args[0]
	r, err := stage.Build(ctx, name, at)
	if err != nil {
		return &daemon.UsageError{Err: err}
	}
	fmt.Fprintf(env.Stdout, "%s\n\n%s\n", r.Subject(), strings.Join(r.Lines(), "\n"))
	if !reportFlags.send {
		return nil
	}
	n, err := stage.Send(ctx, name, at)
	fmt.Fprintf(env.Stdout, "\nsent to %d receivers (the others had it already, or failed)\n", n)
	return err
}
