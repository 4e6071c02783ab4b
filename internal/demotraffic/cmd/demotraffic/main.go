// Command demotraffic writes the demo's access logs (package demotraffic):
//
//	demotraffic history -log .demo/access.log -end 2026-05-04T14:00:00Z -weeks 5
//	demotraffic live    -log .demo/access.log -end 2026-05-04T14:00:00Z
//
// history writes the rotated files and today's part of the live file;
// live appends from -end on, on the clock PAGEWATCH_DEMO_CLOCK sets (the
// wall clock without it), until interrupted. Give both the same -end,
// -seed and -scale. `demotraffic subject EMAIL...` prints emails' subjects,
// decoded.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/pagewatch/pagewatch/internal/democlock"
	"github.com/pagewatch/pagewatch/internal/demotraffic"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "demotraffic:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 0 && args[0] == "subject" {
		for _, f := range args[1:] {
			s, err := demotraffic.Subject(f)
			if err != nil {
				return err
			}
			fmt.Println(s)
		}
		return nil
	}
	if len(args) == 2 && args[0] == "show" {
		return demotraffic.Show(os.Stdout, args[1])
	}
	if len(args) == 0 || (args[0] != "history" && args[0] != "live") {
		return errors.New("usage: demotraffic history|live -log FILE -end TIME [-weeks N] [-seed N] [-scale F], demotraffic subject EMAIL..., or demotraffic show EMAIL")
	}
	fs := flag.NewFlagSet("demotraffic "+args[0], flag.ContinueOnError)
	log := fs.String("log", "", "the live access log; rotated files are written beside it")
	end := fs.String("end", "", "where the history ends and the live phase begins (RFC 3339)")
	weeks := fs.Float64("weeks", 5, "weeks of history (history)")
	seed := fs.Uint64("seed", 27, "the random seed")
	scale := fs.Float64("scale", 1, "multiplies every rate")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	at, err := time.Parse(time.RFC3339Nano, *end)
	if *log == "" || err != nil {
		return errors.New("-log and -end (RFC 3339) are required")
	}
	site := demotraffic.New(at, *seed, *scale)
	if args[0] == "history" {
		start := time.Now()
		st, err := site.WriteHistory(*log, int(*weeks*7+0.5))
		if err != nil {
			return err
		}
		fmt.Printf("%d lines (%.0f%% crawlers) in %d files, %s back to %s, in %.1fs\n", st.Lines,
			100*float64(st.Crawler)/float64(max(st.Lines, 1)), len(st.Files), st.Files[0], at.Format(time.RFC3339), time.Since(start).Seconds())
		return nil
	}
	clock, _, err := democlock.FromEnv()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("writing live traffic to %s from %s on the clock %s\n", *log, at.Format(time.RFC3339), clock)
	return site.Live(ctx, *log, clock, 100*time.Millisecond, func(h time.Time, n int) {
		fmt.Printf("%s  %d lines in the hour (now %s on the demo clock)\n", h.Format("2006-01-02 15:04"), n, clock.Now().Format("15:04:05"))
	})
}
