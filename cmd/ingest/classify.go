package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/pagewatch/pagewatch/config/ingestconf"
	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/pipeline/classify"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
	"github.com/pagewatch/pagewatch/pipeline/pageview"
	"github.com/pagewatch/pagewatch/pipeline/tail"
)

// classifyFlags are `ingest tail --classify`'s.
type classifyFlags struct {
	file   string
	format presetFlag
}

func (f *classifyFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.file, "classify", "", "tail: read this access-log file and print its lines per client class (human, bot, ai_agent, ai_crawler, unknown; ingest.tail.pages.bots and count_classes) with the top user agents of each, then exit; needs no NATS")
	f.format = "combined"
	fs.Var(&f.format, "classify-format", "tail: with --classify, the file's format, a preset: "+strings.Join(logformat.PresetNames(), ", "))
}

// configure makes the classified file the config's one input, so that
// --classify runs with no config file, or one written for other hosts:
// only ingest.tail.pages is read.
func (f *classifyFlags) configure(c *ingestconf.Config) {
	if f.file == "" {
		return
	}
	c.Ingest.Tail.Inputs = []tail.Input{{Path: f.file, Site: "classify", Format: string(f.format)}}
}

// presetFlag is a logformat preset's name, checked as the flag is parsed.
type presetFlag string

func (p *presetFlag) String() string { return string(*p) }

func (p *presetFlag) Set(s string) error {
	if _, err := logformat.Preset(s); err != nil {
		return fmt.Errorf("unknown format %q (known: %s)", s, strings.Join(logformat.PresetNames(), ", "))
	}
	*p = presetFlag(s)
	return nil
}

// runClassify is `ingest tail --classify FILE`: an offline report, so an
// operator sees what count_classes would count before setting it.
func runClassify(env *daemon.Env[ingestconf.Config], f tailFlags) error {
	if f.stdin || f.fromStart {
		return &daemon.UsageError{Err: errors.New("--classify cannot be given with --stdin or --from-start")}
	}
	pages, err := pageview.New(env.Config.Ingest.Tail.Pages)
	if err != nil {
		return err
	}
	p, err := logformat.Preset(string(f.classify.format))
	if err != nil {
		return err
	}
	file, err := os.Open(f.classify.file)
	if err != nil {
		return err
	}
	defer file.Close()
	rep := classify.NewReport(pages.Classifier())
	rep.Counts = pages.Counts
	if err := rep.AddLog(file, p); err != nil {
		return fmt.Errorf("%s: %w", f.classify.file, err)
	}
	return rep.Write(env.Stdout)
}
