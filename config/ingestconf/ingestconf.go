// Package ingestconf is what cmd/ingest reads of the config file: the
// common sections and ingest's (tail and load), nothing of the stages
// downstream.
package ingestconf

import (
	"errors"
	"fmt"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/config/file"
	"github.com/pagewatch/pagewatch/pipeline/load"
	"github.com/pagewatch/pagewatch/pipeline/tail"
)

// Config is ingest's view of the file.
type Config struct {
	file.Base `yaml:",inline"`
	Ingest    Ingest `yaml:"ingest"`
}

// Ingest holds the two halves of cmd/ingest.
type Ingest struct {
	Tail tail.Config `yaml:"tail"`
	Load load.Config `yaml:"load"`
}

// Default returns every default; a config file only overrides.
func Default() Config {
	return Config{Base: file.DefaultBase(), Ingest: Ingest{Tail: tail.DefaultConfig(), Load: load.DefaultConfig()}}
}

// Derive names the tailer after the host when the file leaves it empty.
func (c *Config) Derive() {
	if c.Ingest.Tail.Instance == "" {
		c.Ingest.Tail.Instance = tail.DefaultConfig().Instance
	}
}

// Common is the sections every daemon reads.
func (c Config) Common() file.Base { return c.Base }

// Validate checks the sections the part reads.
func (c Config) Validate(part file.Part) error {
	errs := []error{c.Base.Validate(part)}
	switch part {
	case file.IngestTail:
		errs = append(errs, c.Ingest.Tail.Validate())
	case file.IngestLoad:
		errs = append(errs, c.Ingest.Load.Validate())
	default:
		errs = append(errs, fmt.Errorf("ingest does not run %q", part))
	}
	return errors.Join(errs...)
}

// Redacted renders the config with secrets masked, for --check-config.
func (c Config) Redacted() ([]byte, error) {
	c.NATS.URL = bus.RedactURL(c.NATS.URL)
	return file.Redacted(c)
}
