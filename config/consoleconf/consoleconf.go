// Package consoleconf is what cmd/console reads of the config file: the
// common sections, the console's, and the sweeper's for the rules it
// shows.
package consoleconf

import (
	"errors"
	"fmt"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/config/file"
	"github.com/pagewatch/pagewatch/console"
	"github.com/pagewatch/pagewatch/pipeline/sweep"
)

// Config is the console's view of the file.
type Config struct {
	file.Base `yaml:",inline"`
	// Console is the web console's section (docs/console.md).
	Console console.Config `yaml:"console"`
	// Sweeper is read for its rules, which the console shows.
	Sweeper sweep.Config `yaml:"sweeper"`
}

// Default returns every default; a config file only overrides.
func Default() Config {
	return Config{Base: file.DefaultBase(), Console: console.DefaultConfig(), Sweeper: sweep.DefaultConfig()}
}

// Common is the sections every daemon reads.
func (c Config) Common() file.Base { return c.Base }

// Validate checks the sections the console reads.
func (c Config) Validate(part file.Part) error {
	if part != file.Console {
		return fmt.Errorf("the console does not run %q", part)
	}
	return errors.Join(c.Base.Validate(part), c.Console.Validate(), c.Sweeper.Validate())
}

// Redacted renders the config with secrets masked, for --check-config.
func (c Config) Redacted() ([]byte, error) {
	c.NATS.URL = bus.RedactURL(c.NATS.URL)
	return file.Redacted(c)
}
