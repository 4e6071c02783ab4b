// Package sweeperconf is what cmd/sweeper reads of the config file: the
// common sections, the sweeper's, and the receivers' names its rules may
// route to (not the receivers themselves, which are the worker's).
package sweeperconf

import (
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/config/file"
	"github.com/pagewatch/pagewatch/pipeline/ledger"
	"github.com/pagewatch/pagewatch/pipeline/pageview"
	"github.com/pagewatch/pagewatch/pipeline/sweep"
)

// Config is the sweeper's view of the file.
type Config struct {
	file.Base `yaml:",inline"`
	Sweeper   sweep.Config `yaml:"sweeper"`
	// Receivers are the names in the worker's receivers: list, which
	// the config file's rules are checked against.
	Receivers ReceiverNames `yaml:"receivers"`
	// Ingest is read for ingest.tail.pages alone: how paths are
	// normalised, so the sweeper can warn of a rule no page can match.
	Ingest IngestPages `yaml:"ingest"`
}

// IngestPages is ingest.tail.pages, read without the rest of ingest's
// section (ingest checks that).
type IngestPages struct {
	Pages pageview.Config
}

// UnmarshalYAML takes tail.pages, over the defaults.
func (p *IngestPages) UnmarshalYAML(n *yaml.Node) error {
	var in struct {
		Tail struct {
			Pages yaml.Node `yaml:"pages"`
		} `yaml:"tail"`
	}
	if err := n.Decode(&in); err != nil {
		return err
	}
	if in.Tail.Pages.Kind == 0 {
		return nil
	}
	return in.Tail.Pages.Decode(&p.Pages)
}

// MarshalYAML renders it as the file has it.
func (p IngestPages) MarshalYAML() (any, error) {
	return map[string]any{"tail": map[string]any{"pages": p.Pages}}, nil
}

// Default returns every default; a config file only overrides.
func Default() Config {
	return Config{Base: file.DefaultBase(), Sweeper: sweep.DefaultConfig(), Receivers: ReceiverNames{ledger.BareReceiver},
		Ingest: IngestPages{Pages: pageview.DefaultConfig()}}
}

// Common is the sections every daemon reads.
func (c Config) Common() file.Base { return c.Base }

// Validate checks the sections the sweeper reads.
func (c Config) Validate(part file.Part) error {
	if part != file.Sweeper {
		return fmt.Errorf("the sweeper does not run %q", part)
	}
	return errors.Join(c.Base.Validate(part), c.Sweeper.Validate(), RuleReceivers(c.Sweeper, c.Receivers))
}

// Redacted renders the config with secrets masked, for --check-config.
func (c Config) Redacted() ([]byte, error) {
	c.NATS.URL = bus.RedactURL(c.NATS.URL)
	return file.Redacted(c)
}

// ReceiverNames are the receivers' names, read from the receivers: list
// without the rest of each entry (the worker checks those).
type ReceiverNames []string

// UnmarshalYAML takes each entry's name.
func (r *ReceiverNames) UnmarshalYAML(n *yaml.Node) error {
	var entries []struct {
		Name string `yaml:"name"`
	}
	if err := n.Decode(&entries); err != nil {
		return err
	}
	*r = (*r)[:0]
	for _, e := range entries {
		*r = append(*r, e.Name)
	}
	return nil
}

// RuleReceivers checks that the receivers the config file's rules name
// exist. Rules in sweeper.rules_path are not checked here: a job naming a
// receiver a worker lacks is dead-lettered with the reason.
func RuleReceivers(s sweep.Config, names []string) error {
	known := map[string]bool{}
	for _, name := range names {
		known[name] = true
	}
	var errs []error
	for i, r := range s.Rules {
		for j, name := range r.Notify.Receivers {
			if !known[name] {
				errs = append(errs, fmt.Errorf("sweeper.rules[%d].notify.receivers[%d]: no receiver named %q in receivers", i, j, name))
			}
		}
	}
	return errors.Join(errs...)
}
