package notify

import (
	"github.com/pagewatch/pagewatch/pipeline/links"

	"errors"
	"fmt"
	"os"
	"time"

	"github.com/pagewatch/pagewatch/broker/ratelimit"
	"github.com/pagewatch/pagewatch/config/secret"
)

// Config is the `worker:` section.
type Config struct {
	Listen string `yaml:"listen"`
	// Name identifies this worker in lock values and the history.
	// Default: host name and process id.
	Name        string `yaml:"name"`
	Consumer    string `yaml:"consumer"`
	Concurrency int    `yaml:"concurrency"`
	// Prefetch is how many jobs a worker holds while its sends are being
	// held back by a rate limit, grouped by page, so the runner that
	// locks a page also takes that page's later jobs, and taken site by
	// site in turn: how deep into the queue a site's crossing is seen
	// past another site's backlog. While nothing holds sends back the
	// queue drains at full speed and a worker holds at most
	// shallowPrefetch, so it does not hoard jobs other workers could
	// be sending.
	Prefetch int `yaml:"prefetch"`
	// LockTTL is the page lease: how long a dead worker can keep a page
	// locked. The holder renews it every third of that.
	LockTTL time.Duration `yaml:"lock_ttl"`
	// DeferDelay is how long a job for a locked page waits before it is
	// offered again.
	DeferDelay time.Duration `yaml:"defer_delay"`
	// AckWait bounds how long a job stays with a worker that stopped
	// answering before JetStream offers it to another.
	AckWait time.Duration `yaml:"ack_wait"`
	// ClaimTimeout is how old a delivery's claim must be before another
	// worker takes it over and sends: the claimer died between claiming
	// and recording, or cannot reach the sent ledger. Its claimer keeps
	// trying to record a send for about this long, so an outage of the
	// ledger shorter than it sends nothing twice; a worker that died
	// mid-send has its crossing sent again after it. 0: twice ack_wait.
	ClaimTimeout time.Duration `yaml:"claim_timeout"`
	// RateLimit spaces out mail across all workers.
	RateLimit ratelimit.Config `yaml:"rate_limit"`
	// DrainTimeout is how long in-flight sends may finish on shutdown.
	DrainTimeout time.Duration `yaml:"drain_timeout"`
	// Routing picks each crossing's receivers (see Routing).
	Routing Routing `yaml:"routing"`
	// Links are the unsubscribe and snooze links in emails (links.go).
	Links links.Config `yaml:"links"`
	// APIToken is the bearer token the silences API asks of callers that
	// are not on loopback. Unset, only loopback callers may use it: the
	// admin listener also serves probes and metrics, and is often bound
	// to every address.
	APIToken secret.Value `yaml:"api_token"`
}

// DefaultConfig returns the defaults documented in deploy/pagewatch.example.yaml.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	return Config{
		Listen:       "127.0.0.1:9104",
		Name:         fmt.Sprintf("%s-%d", host, os.Getpid()),
		Consumer:     "worker",
		Concurrency:  4,
		Prefetch:     10_000,
		LockTTL:      15 * time.Second,
		DeferDelay:   time.Second,
		AckWait:      time.Minute,
		DrainTimeout: 10 * time.Second,
		RateLimit:    ratelimit.DefaultConfig(),
		Routing:      DefaultRouting(),
		Links:        links.DefaultConfig(),
	}
}

// Validate reports every problem, naming its key.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Name == "" {
		add("worker.name: must be set")
	}
	if c.Consumer == "" {
		add("worker.consumer: must be set")
	}
	if c.Concurrency < 1 || c.Concurrency > 1024 {
		add("worker.concurrency: must be 1..1024, got %d", c.Concurrency)
	}
	if c.Prefetch < c.Concurrency || c.Prefetch > 100_000 {
		add("worker.prefetch: must be worker.concurrency (%d)..100000, got %d", c.Concurrency, c.Prefetch)
	}
	if c.LockTTL < 3*time.Second {
		add("worker.lock_ttl: must be at least 3s, got %s", c.LockTTL)
	}
	if c.DeferDelay <= 0 || c.DeferDelay > c.LockTTL {
		add("worker.defer_delay: must be positive and at most worker.lock_ttl, got %s", c.DeferDelay)
	}
	if c.AckWait < 2*c.LockTTL {
		add("worker.ack_wait: must be at least twice worker.lock_ttl (%s), got %s", c.LockTTL, c.AckWait)
	}
	if c.ClaimTimeout != 0 && c.ClaimTimeout < c.AckWait {
		add("worker.claim_timeout: must be 0 (twice worker.ack_wait) or at least worker.ack_wait (%s), got %s", c.AckWait, c.ClaimTimeout)
	}
	if c.DrainTimeout <= 0 {
		add("worker.drain_timeout: must be positive, got %s", c.DrainTimeout)
	}
	if err := c.APIToken.Err(); err != nil {
		add("worker.api_token: %v", err)
	} else if c.APIToken.IsSet() && len(c.APIToken.Reveal()) < 16 {
		add("worker.api_token: must be at least 16 bytes")
	}
	errs = append(errs, c.RateLimit.Validate("worker.rate_limit"), c.Links.Validate("worker.links"))
	return errors.Join(errs...)
}

// claimTimeout is ClaimTimeout with its default applied.
func (c Config) claimTimeout() time.Duration {
	if c.ClaimTimeout > 0 {
		return c.ClaimTimeout
	}
	return 2 * c.AckWait
}
