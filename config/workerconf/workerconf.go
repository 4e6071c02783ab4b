// Package workerconf is what cmd/worker reads of the config file: the
// common sections, the worker's, mail, the receivers and the reports.
package workerconf

import (
	"errors"
	"fmt"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/config/file"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/pipeline/report"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

// Config is the worker's view of the file.
type Config struct {
	file.Base `yaml:",inline"`
	Worker    notify.Config `yaml:"worker"`
	Mail      mail.Config   `yaml:"mail"`
	// Receivers are where the worker delivers crossings; worker.routing
	// picks among them.
	Receivers []Receiver `yaml:"receivers"`
	// Reports are the scheduled reports the worker sends
	// (docs/reports.md).
	Reports []report.Spec `yaml:"reports"`
}

// Default returns every default; a config file only overrides.
func Default() Config {
	return Config{Base: file.DefaultBase(), Worker: notify.DefaultConfig(), Mail: mail.DefaultConfig(), Receivers: DefaultReceivers()}
}

// Derive names the worker after the host when the file leaves it empty.
func (c *Config) Derive() {
	if c.Worker.Name == "" {
		c.Worker.Name = notify.DefaultConfig().Name
	}
}

// Common is the sections every daemon reads.
func (c Config) Common() file.Base { return c.Base }

// ReceiverNames lists the receivers' names, in order.
func (c Config) ReceiverNames() []string { return Names(c.Receivers) }

// Validate checks the sections the worker reads.
func (c Config) Validate(part file.Part) error {
	if part != file.Worker {
		return fmt.Errorf("the worker does not run %q", part)
	}
	return Check(c.Base, c.Worker, c.Mail, c.Receivers, c.Reports)
}

// Check validates the worker's sections together: routes and reports
// name receivers that exist, and a drain ends before the process must.
func Check(b file.Base, w notify.Config, m mail.Config, rs []Receiver, reports []report.Spec) error {
	names := Names(rs)
	errs := []error{b.Validate(file.Worker), w.Validate(), m.Validate(), ValidateReceivers(rs),
		w.Routing.Validate("worker.routing", names), report.Validate(reports, names)}
	if w.DrainTimeout >= b.ShutdownTimeout {
		// Otherwise the process is gone mid-send: the duplicate case.
		errs = append(errs, fmt.Errorf("worker.drain_timeout: must be less than shutdown_timeout (%s), got %s", b.ShutdownTimeout, w.DrainTimeout))
	}
	return errors.Join(errs...)
}

// Redacted renders the config with secrets masked, for --check-config.
func (c Config) Redacted() ([]byte, error) {
	c.NATS.URL = bus.RedactURL(c.NATS.URL)
	return file.Redacted(c)
}
