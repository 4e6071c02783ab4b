// Package config is pagewatch's one YAML file, shared by the three daemons.
// Each section belongs to the package that uses it (its struct, defaults
// and Validate live there); this package composes them, decodes strictly
// and validates the sections a daemon needs.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/config/strict"
	"github.com/pagewatch/pagewatch/console"
	"github.com/pagewatch/pagewatch/pipeline/load"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/pipeline/report"
	"github.com/pagewatch/pagewatch/pipeline/sweep"
	"github.com/pagewatch/pagewatch/pipeline/tail"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

// Config is the whole file.
type Config struct {
	Log        Log               `yaml:"log"`
	NATS       bus.Config        `yaml:"nats"`
	ClickHouse clickhouse.Config `yaml:"clickhouse"`
	Ingest     Ingest            `yaml:"ingest"`
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

// Ingest holds the two halves of cmd/ingest.
type Ingest struct {
	Tail tail.Config `yaml:"tail"`
	Load load.Config `yaml:"load"`
}

// Log configures structured logging.
type Log struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text or json
}

// Default returns every default; a config file only overrides.
func Default() Config {
	return Config{
		Log:             Log{Level: "info", Format: "text"},
		NATS:            bus.DefaultConfig(),
		ClickHouse:      clickhouse.DefaultConfig(),
		Ingest:          Ingest{Tail: tail.DefaultConfig(), Load: load.DefaultConfig()},
		Sweeper:         sweep.DefaultConfig(),
		Worker:          notify.DefaultConfig(),
		Mail:            mail.DefaultConfig(),
		Receivers:       DefaultReceivers(),
		Console:         console.DefaultConfig(),
		ShutdownTimeout: 15 * time.Second,
	}
}

// Load reads a config file over the defaults. An empty path means the
// defaults alone.
func Load(path string) (Config, error) {
	cfg := Default()
	if path == "" {
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("read config: %w", err)
	}
	if err := Parse(data, &cfg); err != nil {
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// Parse decodes YAML over cfg, rejecting unknown keys and bad values with
// errors that name the key and line.
func Parse(data []byte, cfg *Config) error {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // an empty file: all defaults
		}
		return err
	}
	if err := strict.Decode(&doc, cfg, ""); err != nil {
		return err
	}
	// Host-dependent defaults: an empty value in the file means "derive it".
	def := Default()
	if cfg.Ingest.Tail.Instance == "" {
		cfg.Ingest.Tail.Instance = def.Ingest.Tail.Instance
	}
	if cfg.Worker.Name == "" {
		cfg.Worker.Name = def.Worker.Name
	}
	return nil
}

// Part names what a daemon runs, and so which sections it validates.
type Part string

// The parts of pagewatch.
const (
	IngestTail Part = "ingest tail"
	IngestLoad Part = "ingest load"
	Sweeper    Part = "sweeper"
	Worker     Part = "worker"
	Console    Part = "console"
)

// Sections are the config keys (dotted prefixes) the part reads: the
// common ones and its own.
func (p Part) Sections() []string {
	common := []string{"log", "nats", "shutdown_timeout"}
	switch p {
	case IngestTail:
		return append(common, "ingest.tail")
	case IngestLoad:
		return append(common, "clickhouse", "ingest.load")
	case Sweeper:
		return append(common, "clickhouse", "sweeper")
	case Worker:
		return append(common, "clickhouse", "worker", "mail", "receivers", "reports")
	case Console:
		return append(common, "clickhouse", "console", "sweeper")
	}
	return common
}

// Validate checks the common sections and those the part uses.
func (c Config) Validate(part Part) error {
	errs := []error{c.Log.validate(), c.NATS.Validate()}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("shutdown_timeout: must be positive, got %s", c.ShutdownTimeout))
	}
	switch part {
	case IngestTail:
		errs = append(errs, c.Ingest.Tail.Validate())
	case IngestLoad:
		errs = append(errs, c.ClickHouse.Validate(), c.Ingest.Load.Validate())
	case Sweeper:
		errs = append(errs, c.ClickHouse.Validate(), c.Sweeper.Validate(), c.ruleReceivers())
	case Worker:
		errs = append(errs, c.ClickHouse.Validate(), c.Worker.Validate(), c.Mail.Validate(), validateReceivers(c.Receivers),
			c.Worker.Routing.Validate("worker.routing", c.ReceiverNames()), report.Validate(c.Reports, c.ReceiverNames()))
		if c.Worker.DrainTimeout >= c.ShutdownTimeout {
			// Otherwise the process is gone mid-send: the duplicate case.
			errs = append(errs, fmt.Errorf("worker.drain_timeout: must be less than shutdown_timeout (%s), got %s", c.ShutdownTimeout, c.Worker.DrainTimeout))
		}
	case Console:
		// The sweeper's section for its rules, which the console shows.
		errs = append(errs, c.ClickHouse.Validate(), c.Console.Validate(), c.Sweeper.Validate())
	default:
		errs = append(errs, fmt.Errorf("unknown part %q", part))
	}
	return errors.Join(errs...)
}

func (l Log) validate() error {
	var errs []error
	switch l.Level {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf(`log.level: must be debug, info, warn or error, got %q`, l.Level))
	}
	if l.Format != "text" && l.Format != "json" {
		errs = append(errs, fmt.Errorf(`log.format: must be "text" or "json", got %q`, l.Format))
	}
	return errors.Join(errs...)
}

// Redacted renders the config as YAML with secrets masked, for
// --check-config.
func (c Config) Redacted() ([]byte, error) {
	c.NATS.URL = bus.RedactURL(c.NATS.URL)
	n, err := encodeNode(reflect.ValueOf(c))
	if err != nil {
		return nil, fmt.Errorf("render config: %w", err)
	}
	return yaml.Marshal(n)
}
