package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/pagewatch/pagewatch/config/workerconf"
	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/pipeline/links"
)

// unsubscribes lists the addresses that used an email's unsubscribe
// link, or takes one back (the address is mailed by the rule again).
func unsubscribes(ctx context.Context, env *daemon.Env[workerconf.Config]) error {
	usage := func(format string, args ...any) error {
		return &daemon.UsageError{Err: fmt.Errorf(format+"\n(worker unsubscribes list|remove <rule> <address>)", args...)}
	}
	if len(env.Args) == 0 {
		return usage("unsubscribes: say list or remove")
	}
	b, err := env.NATS(ctx)
	if err != nil {
		return err
	}
	u, err := links.OpenUnsubscribes(ctx, b)
	if err != nil {
		return err
	}
	switch verb, rest := env.Args[0], env.Args[1:]; {
	case verb == "list" && len(rest) == 0:
		all, err := u.List(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RULE\tADDRESS\tSINCE")
		for _, x := range all {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", x.Rule, x.Recipient, x.At.Format(time.RFC3339))
		}
		return tw.Flush()
	case verb == "remove" && len(rest) == 2:
		if has, err := u.Has(ctx, rest[0], rest[1]); err != nil {
			return err
		} else if !has {
			return usage("unsubscribes remove: %s is not unsubscribed from %s", rest[1], rest[0])
		}
		if err := u.Remove(ctx, rest[0], rest[1]); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "%s is mailed by %s again\n", rest[1], rest[0])
		return nil
	}
	return usage("unsubscribes: unexpected arguments %q", env.Args)
}
