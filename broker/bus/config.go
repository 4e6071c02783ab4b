package bus

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pagewatch/pagewatch/config/secret"
	"github.com/pagewatch/pagewatch/config/tlsconfig"
)

// Config is the `nats:` section.
type Config struct {
	URL       string       `yaml:"url"`
	User      string       `yaml:"user"`
	Password  secret.Value `yaml:"password"`
	Token     secret.Value `yaml:"token"`
	CredsFile string       `yaml:"creds_file"`
	// NkeySeedFile holds a user NKey seed ("SU..."); the server knows the
	// public key. At most one of creds_file, nkey_seed_file, user with
	// password, and token is set.
	NkeySeedFile   string           `yaml:"nkey_seed_file"`
	TLS            tlsconfig.Config `yaml:"tls"`
	ConnectTimeout time.Duration    `yaml:"connect_timeout"`
	// PingInterval is how often the client pings its server; with more
	// than two pings unanswered at a tick (20 to 30 s at 10 s) it moves to
	// another server of the cluster. nats.go's
	// own 2 minutes would leave a daemon stalled for minutes on a server
	// that is frozen (a paused VM, a stopped process) but keeps its
	// connections open.
	PingInterval time.Duration `yaml:"ping_interval"`
	// Prefix namespaces every subject, stream and bucket, so two
	// pagewatch installations can share one NATS account.
	Prefix   string `yaml:"prefix"`
	Replicas int    `yaml:"replicas"`
	// HitsMaxAge is how long hits stay in JetStream, loaded or not: the
	// longest loader or ClickHouse outage that loses nothing, the window in
	// which ClickHouse can be rebuilt by replay, and how long a stopped
	// tailer finds its position again.
	HitsMaxAge time.Duration `yaml:"hits_max_age"`
	// DeadLetterMaxAge is how long a message that could not be processed
	// stays in the dead-letter stream for someone to inspect or replay.
	DeadLetterMaxAge time.Duration `yaml:"dead_letter_max_age"`
}

// DefaultConfig returns the defaults documented in deploy/pagewatch.example.yaml.
func DefaultConfig() Config {
	return Config{
		URL:            nats.DefaultURL,
		ConnectTimeout: 5 * time.Second,
		PingInterval:   10 * time.Second,
		Prefix:         "pagewatch",
		Replicas:       1,
		HitsMaxAge:     72 * time.Hour,
		// Long enough to notice and act on over a holiday.
		DeadLetterMaxAge: 30 * 24 * time.Hour,
	}
}

var prefixRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// Validate reports the first problem, naming its key.
func (c Config) Validate() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("nats.url: must be set, e.g. nats://127.0.0.1:4222"))
	}
	if c.ConnectTimeout <= 0 {
		errs = append(errs, fmt.Errorf("nats.connect_timeout: must be positive, got %s", c.ConnectTimeout))
	}
	if c.PingInterval < time.Second {
		errs = append(errs, fmt.Errorf("nats.ping_interval: must be at least 1s, got %s", c.PingInterval))
	}
	if !prefixRE.MatchString(c.Prefix) {
		errs = append(errs, fmt.Errorf("nats.prefix: must match %s, got %q", prefixRE, c.Prefix))
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		errs = append(errs, fmt.Errorf("nats.replicas: must be 1..5, got %d", c.Replicas))
	}
	if c.HitsMaxAge < time.Hour {
		errs = append(errs, fmt.Errorf("nats.hits_max_age: must be at least 1h, got %s", c.HitsMaxAge))
	}
	if c.DeadLetterMaxAge < time.Hour {
		errs = append(errs, fmt.Errorf("nats.dead_letter_max_age: must be at least 1h, got %s", c.DeadLetterMaxAge))
	}
	if err := c.Password.Err(); err != nil {
		errs = append(errs, fmt.Errorf("nats.password: %w", err))
	}
	if err := c.Token.Err(); err != nil {
		errs = append(errs, fmt.Errorf("nats.token: %w", err))
	}
	if c.Password.IsSet() && c.User == "" {
		errs = append(errs, errors.New("nats.password: set without nats.user"))
	}
	errs = append(errs, c.validateAuth()...)
	errs = append(errs, c.TLS.Validate("nats.tls"))
	return errors.Join(errs...)
}

// validateAuth allows one way of authenticating: with two, nats.go sends
// both and the server picks one, so which credential is in use would
// depend on the server's configuration rather than this file.
func (c Config) validateAuth() []error {
	var errs []error
	var set []string
	if c.CredsFile != "" {
		set = append(set, "nats.creds_file")
		if err := readable(c.CredsFile); err != nil {
			errs = append(errs, fmt.Errorf("nats.creds_file: %w", err))
		}
	}
	if c.NkeySeedFile != "" {
		set = append(set, "nats.nkey_seed_file")
		if err := readable(c.NkeySeedFile); err != nil {
			errs = append(errs, fmt.Errorf("nats.nkey_seed_file: %w", err))
		} else if _, err := nats.NkeyOptionFromSeed(c.NkeySeedFile); err != nil {
			// nats.go's errors say what is wrong, never the seed.
			errs = append(errs, fmt.Errorf("nats.nkey_seed_file: %s: %w", c.NkeySeedFile, err))
		}
	}
	if c.User != "" || c.Password.IsSet() {
		set = append(set, "nats.user/nats.password")
	}
	if c.Token.IsSet() {
		set = append(set, "nats.token")
	}
	if len(set) > 1 {
		errs = append(errs, fmt.Errorf("%s: set together; use only one of nats.creds_file, nats.nkey_seed_file, nats.user with nats.password, nats.token", strings.Join(set, " and ")))
	}
	return errs
}

// readable checks a file can be opened now, so a wrong path stops a daemon
// at start-up rather than at its first connection attempt.
func readable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err // names the path
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	return nil
}
