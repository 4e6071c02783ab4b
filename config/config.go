// Package config is pagewatch's one YAML file whole, every section at
// once: what the tests, the deploy checks and the docs read. Each daemon
// reads only its own sections (config/ingestconf, sweeperconf, workerconf,
// consoleconf, through config/file), so a binary links only the stages it
// runs; each section belongs to the package that uses it (its struct,
// defaults and Validate live there). Validate here asks the daemon's view
// of the file, so the whole file is judged exactly as the daemons judge it.
package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/config/consoleconf"
	"github.com/pagewatch/pagewatch/config/file"
	"github.com/pagewatch/pagewatch/config/ingestconf"
	"github.com/pagewatch/pagewatch/config/sweeperconf"
	"github.com/pagewatch/pagewatch/config/workerconf"
	"github.com/pagewatch/pagewatch/console"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/pipeline/report"
	"github.com/pagewatch/pagewatch/pipeline/sweep"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

// Config is the whole file.
type Config struct {
	Log        Log               `yaml:"log"`
	NATS       bus.Config        `yaml:"nats"`
	ClickHouse clickhouse.Config `yaml:"clickhouse"`
	Ingest     ingestconf.Ingest `yaml:"ingest"`
	Sweeper    sweep.Config      `yaml:"sweeper"`
	Worker     notify.Config     `yaml:"worker"`
	Mail       mail.Config       `yaml:"mail"`
	// Receivers are where the worker delivers crossings; worker.routing
	// picks among them.
	Receivers []Receiver `yaml:"receivers"`
	// Reports are the scheduled reports the worker sends
	// (docs/reports.md).
	Reports []report.Spec `yaml:"reports"`
	// Console is the web console's section (docs/console.md).
	Console console.Config `yaml:"console"`
	// ShutdownTimeout bounds a daemon's exit after SIGTERM.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
}

// The names the daemons' views share with the whole file.
type (
	// Log configures structured logging.
	Log = file.Log
	// Part names what a daemon runs, and so which sections it validates.
	Part = file.Part
	// Ingest holds the two halves of cmd/ingest.
	Ingest = ingestconf.Ingest
	// Receiver is one entry of the receivers: list.
	Receiver = workerconf.Receiver
)

// The parts of pagewatch.
const (
	IngestTail = file.IngestTail
	IngestLoad = file.IngestLoad
	Sweeper    = file.Sweeper
	Worker     = file.Worker
	Console    = file.Console
)

// ReceiverTypeEmail is the type of email receivers.
const ReceiverTypeEmail = workerconf.ReceiverTypeEmail

// DefaultReceivers is the one receiver of a config that lists none.
func DefaultReceivers() []Receiver { return workerconf.DefaultReceivers() }

// Default returns every default; a config file only overrides.
func Default() Config {
	b, in, w, co := file.DefaultBase(), ingestconf.Default(), workerconf.Default(), consoleconf.Default()
	return Config{
		Log: b.Log, NATS: b.NATS, ClickHouse: b.ClickHouse, ShutdownTimeout: b.ShutdownTimeout,
		Ingest: in.Ingest, Sweeper: sweep.DefaultConfig(), Worker: w.Worker, Mail: w.Mail,
		Receivers: w.Receivers, Console: co.Console,
	}
}

// Load reads a config file over the defaults. An empty path means the
// defaults alone.
func Load(path string) (Config, error) { return file.Load(path, Default()) }

// Parse decodes YAML over cfg, rejecting unknown keys and bad values with
// errors that name the key and line.
func Parse(data []byte, cfg *Config) error { return file.Parse(data, cfg) }

// Derive fills the host-dependent values the file leaves empty.
func (c *Config) Derive() {
	in := c.ingest()
	in.Derive()
	c.Ingest = in.Ingest
	w := c.worker()
	w.Derive()
	c.Worker = w.Worker
}

// Common is the sections every daemon reads.
func (c Config) Common() file.Base {
	return file.Base{Log: c.Log, NATS: c.NATS, ClickHouse: c.ClickHouse, ShutdownTimeout: c.ShutdownTimeout}
}

func (c Config) ingest() ingestconf.Config {
	return ingestconf.Config{Base: c.Common(), Ingest: c.Ingest}
}
func (c Config) worker() workerconf.Config {
	return workerconf.Config{Base: c.Common(), Worker: c.Worker, Mail: c.Mail, Receivers: c.Receivers, Reports: c.Reports}
}

// ReceiverNames lists the receivers' names, in order.
func (c Config) ReceiverNames() []string { return workerconf.Names(c.Receivers) }

// Validate checks the sections the part reads, as its daemon does.
func (c Config) Validate(part Part) error {
	switch part {
	case IngestTail, IngestLoad:
		return c.ingest().Validate(part)
	case Sweeper:
		return sweeperconf.Config{Base: c.Common(), Sweeper: c.Sweeper, Receivers: c.ReceiverNames(), Ingest: sweeperconf.IngestPages{Pages: c.Ingest.Tail.Pages}}.Validate(part)
	case Worker:
		return c.worker().Validate(part)
	case Console:
		return consoleconf.Config{Base: c.Common(), Console: c.Console, Sweeper: c.Sweeper}.Validate(part)
	}
	return errors.Join(c.Common().Validate(part), fmt.Errorf("unknown part %q", part))
}

// Redacted renders the config as YAML with secrets masked, for
// --check-config.
func (c Config) Redacted() ([]byte, error) {
	c.NATS.URL = bus.RedactURL(c.NATS.URL)
	return file.Redacted(c)
}

// SetLog replaces the log section: the --log-level and --log-format
// flags' way in.
func (c *Config) SetLog(l Log) { c.Log = l }
