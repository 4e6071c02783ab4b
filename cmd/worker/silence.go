package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pagewatch/pagewatch/config/file"
	"github.com/pagewatch/pagewatch/config/workerconf"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/pipeline/silence"
)

// silenceFlags are `worker silence`'s flags.
type silenceFlags struct {
	site, rule, page, author, comment string
	labels                            labelFlags
	forDur                            time.Duration
	starts, ends                      string
	all                               bool
}

type labelFlags map[string]string

func (l *labelFlags) String() string { return fmt.Sprint(map[string]string(*l)) }
func (l *labelFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return errors.New("want name=value")
	}
	if *l == nil {
		*l = labelFlags{}
	}
	(*l)[k] = v
	return nil
}

func (f *silenceFlags) bind(fs *flag.FlagSet) {
	// fs.Var starts from what it is given: each parse (a test runs the
	// program many times) starts with no labels.
	f.labels = nil
	fs.StringVar(&f.site, "site", "", "silence add: match this site")
	fs.StringVar(&f.rule, "rule", "", "silence add: match this rule")
	fs.StringVar(&f.page, "page", "", "silence add: match pages by this glob (* within a segment, ** across)")
	fs.Var(&f.labels, "label", "silence add: match this rule label, name=value (repeatable)")
	fs.DurationVar(&f.forDur, "for", 0, "silence add: how long, from --starts (default now); or give --ends")
	fs.StringVar(&f.starts, "starts", "", "silence add: start, RFC 3339 (default now)")
	fs.StringVar(&f.ends, "ends", "", "silence add: end, RFC 3339")
	fs.StringVar(&f.author, "author", os.Getenv("USER"), "silence add: who silences (default $USER)")
	fs.StringVar(&f.comment, "comment", "", "silence add: why")
	fs.BoolVar(&f.all, "all", false, "silence list: include ended silences")
}

func silenceCommand() daemon.Command[workerconf.Config] {
	var f silenceFlags
	return daemon.Command[workerconf.Config]{Name: "silence", Args: "add|list|expire <id>", Part: file.Worker, Flags: f.bind,
		Run:     func(ctx context.Context, env *daemon.Env[workerconf.Config]) error { return silenceCmd(ctx, env, f) },
		Summary: "silence crossings (--site, --rule, --page glob, --label k=v; --for or --ends; --author, --comment), list (--all) or expire them"}
}

// silence creates, lists and expires silences (in NATS KV, read by every
// worker within moments).
func silenceCmd(ctx context.Context, env *daemon.Env[workerconf.Config], f silenceFlags) error {
	usage := func(format string, args ...any) error {
		return &daemon.UsageError{Err: fmt.Errorf(format+"\n(worker silence add|list|expire <id>)", args...)}
	}
	if len(env.Args) == 0 {
		return usage("silence: say add, list or expire")
	}
	b, err := env.NATS(ctx)
	if err != nil {
		return err
	}
	s, err := silence.Open(ctx, b, env.Logger)
	if err != nil {
		return err
	}
	now := time.Now()
	switch verb, rest := env.Args[0], env.Args[1:]; {
	case verb == "add" && len(rest) == 0:
		sl, err := silenceFromFlags(f, now)
		if err == nil {
			sl, err = s.Add(ctx, sl, now)
		}
		if err != nil {
			return &daemon.UsageError{Err: fmt.Errorf("silence add: %w", err)}
		}
		fmt.Fprintln(env.Stdout, sl.ID)
	case verb == "list" && len(rest) == 0:
		all, err := s.List(ctx)
		if err != nil {
			return err
		}
		printSilences(env, all, now, f.all)
	case verb == "expire" && len(rest) == 1:
		sl, err := s.Expire(ctx, rest[0], now)
		if errors.Is(err, silence.ErrNotFound) {
			return &daemon.UsageError{Err: fmt.Errorf("silence expire: %w: %s", err, rest[0])}
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "%s ended %s\n", sl.ID, sl.EndsAt.Format(time.RFC3339))
	default:
		return usage("silence: unexpected arguments %q", env.Args)
	}
	return nil
}

func silenceFromFlags(f silenceFlags, now time.Time) (silence.Silence, error) {
	req := silence.Request{Match: crossing.Match{Site: f.site, Rule: f.rule, Page: f.page, Labels: f.labels},
		Author: f.author, Comment: f.comment}
	if f.starts != "" {
		t, err := time.Parse(time.RFC3339, f.starts)
		if err != nil {
			return silence.Silence{}, fmt.Errorf("--starts: %w", err)
		}
		req.StartsAt = t
	}
	if f.ends != "" {
		t, err := time.Parse(time.RFC3339, f.ends)
		if err != nil {
			return silence.Silence{}, fmt.Errorf("--ends: %w", err)
		}
		req.EndsAt = t
	}
	if f.forDur != 0 {
		req.Duration = f.forDur.String()
	}
	if req.EndsAt.IsZero() && req.Duration == "" {
		return silence.Silence{}, errors.New("give --for or --ends")
	}
	return req.Silence(now)
}

// printSilences lists the silences that have not ended, or with ended
// all of them.
func printSilences(env *daemon.Env[workerconf.Config], all []silence.Silence, now time.Time, ended bool) {
	sort.SliceStable(all, func(i, j int) bool { return all[i].StartsAt.Before(all[j].StartsAt) })
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tSTARTS\tENDS\tMATCH\tAUTHOR\tCOMMENT")
	for _, s := range all {
		state := "active"
		switch {
		case !s.EndsAt.After(now):
			if !ended {
				continue
			}
			state = "ended"
		case s.StartsAt.After(now):
			state = "pending"
		}
		var m []string
		for k, v := range map[string]string{"site": s.Match.Site, "rule": s.Match.Rule, "page": s.Match.Page} {
			if v != "" {
				m = append(m, k+"="+v)
			}
		}
		for k, v := range s.Match.Labels {
			m = append(m, "label:"+k+"="+v)
		}
		sort.Strings(m)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, state, s.StartsAt.Format(time.RFC3339), s.EndsAt.Format(time.RFC3339),
			strings.Join(m, " "), s.Author, s.Comment)
	}
	tw.Flush()
}
