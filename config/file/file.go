// Package file reads pagewatch's one YAML file into the sections a
// daemon runs. Every daemon is given the same file; each decodes its own
// sections strictly (an unknown key, a key given twice, a value of the
// wrong kind is an error naming the key and its line) and passes over
// the sections only other daemons read, so a binary links only the
// stages it runs. The whole file, every section at once, is package
// config's.
package file

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/config/strict"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
)

// Sections are the file's top-level keys, whichever daemon reads them.
var Sections = []string{"log", "nats", "clickhouse", "ingest", "sweeper", "worker", "mail", "receivers", "reports", "console", "shutdown_timeout"}

// Base is what every daemon reads: how it logs, where NATS and
// ClickHouse are, how long it may take to stop.
type Base struct {
	Log        Log               `yaml:"log"`
	NATS       bus.Config        `yaml:"nats"`
	ClickHouse clickhouse.Config `yaml:"clickhouse"`
	// ShutdownTimeout bounds a daemon's exit after SIGTERM.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
}

// Log configures structured logging.
type Log struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text or json
}

// DefaultBase returns the common sections' defaults.
func DefaultBase() Base {
	return Base{
		Log:             Log{Level: "info", Format: "text"},
		NATS:            bus.DefaultConfig(),
		ClickHouse:      clickhouse.DefaultConfig(),
		ShutdownTimeout: 15 * time.Second,
	}
}

// Validate checks the common sections, and ClickHouse's for a part that
// uses it.
func (b Base) Validate(part Part) error {
	errs := []error{b.Log.Validate(), b.NATS.Validate()}
	if b.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("shutdown_timeout: must be positive, got %s", b.ShutdownTimeout))
	}
	if slices.Contains(part.Sections(), "clickhouse") {
		errs = append(errs, b.ClickHouse.Validate())
	}
	return errors.Join(errs...)
}

// Validate checks log.level and log.format.
func (l Log) Validate() error {
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

// Deriver is a config with values derived from the host (its name) when
// the file leaves them empty.
type Deriver interface{ Derive() }

// Load reads a config file over defaults. An empty path means the
// defaults alone.
func Load[C any](path string, defaults C) (C, error) {
	cfg := defaults
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

// Parse decodes YAML over cfg, rejecting unknown keys and bad values
// with errors that name the key and line. A section of the file that cfg
// has no field for but another daemon reads (Sections) is passed over.
func Parse[C any](data []byte, cfg *C) error {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // an empty file: all defaults
		}
		return err
	}
	if err := dropOthers(&doc, reflect.TypeOf(cfg).Elem()); err != nil {
		return err
	}
	if err := strict.Decode(&doc, cfg, ""); err != nil {
		return err
	}
	if d, ok := any(cfg).(Deriver); ok {
		d.Derive()
	}
	return nil
}

// dropOthers removes the top-level sections t does not read but another
// daemon does. A key no daemon reads is an error listing every section,
// not only t's.
func dropOthers(doc *yaml.Node, t reflect.Type) error {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	own := map[string]bool{}
	ownKeys(t, own)
	m := doc.Content[0]
	kept := m.Content[:0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i].Value
		if !own[k] && slices.Contains(Sections, k) {
			continue
		}
		if !own[k] {
			known := slices.Sorted(slices.Values(Sections))
			return fmt.Errorf("%s (line %d): unknown key (known keys here: %s)", k, m.Content[i].Line, strings.Join(known, ", "))
		}
		kept = append(kept, m.Content[i], m.Content[i+1])
	}
	m.Content = kept
	return nil
}

func ownKeys(t reflect.Type, out map[string]bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case f.Anonymous && name == "" && opts == "inline" && f.Type.Kind() == reflect.Struct:
			ownKeys(f.Type, out)
		case name != "" && name != "-":
			out[name] = true
		}
	}
}

// Redacted renders a config as YAML with secrets masked, for
// --check-config.
func Redacted(v any) ([]byte, error) {
	n, err := encodeNode(reflect.ValueOf(v))
	if err != nil {
		return nil, fmt.Errorf("render config: %w", err)
	}
	return yaml.Marshal(n)
}

// SetLog replaces the log section: the --log-level and --log-format
// flags' way in.
func (b *Base) SetLog(l Log) { b.Log = l }
