package ratelimit

import (
	"errors"
	"fmt"
	"time"
)

// Limit is "Rate sends per Per, with bursts of up to Burst": 10 per 1s
// burst 20 lets 20 go at once after a quiet spell, then one every 100 ms.
// The zero Limit means no limit.
type Limit struct {
	Rate  int           `yaml:"rate"`
	Per   time.Duration `yaml:"per"`
	Burst int           `yaml:"burst"`
}

// Bounds keep the arithmetic in int64 nanoseconds far from overflow and
// reject values that are surely typos.
const (
	maxRate  = 1_000_000
	maxBurst = 1_000_000
	minPer   = time.Millisecond
	maxPer   = 7 * 24 * time.Hour
)

// Off reports whether l is the zero Limit, which limits nothing.
func (l Limit) Off() bool { return l == Limit{} }

// Validate reports every problem, naming the config key (e.g.
// "worker.rate_limit.global").
func (l Limit) Validate(key string) error {
	if l.Off() {
		return nil
	}
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if l.Rate < 1 || l.Rate > maxRate {
		add("%s.rate: must be 1..%d (or rate, per and burst all 0 for no limit), got %d", key, maxRate, l.Rate)
	}
	if l.Per < minPer || l.Per > maxPer {
		add("%s.per: must be %s..%s, got %s", key, minPer, maxPer, l.Per)
	} else if l.Rate >= 1 && l.Per/time.Duration(l.Rate) < time.Microsecond {
		add("%s: %d per %s is more than one a microsecond", key, l.Rate, l.Per)
	}
	if l.Burst < 1 || l.Burst > maxBurst {
		add("%s.burst: must be 1..%d, got %d", key, maxBurst, l.Burst)
	}
	return errors.Join(errs...)
}

func (l Limit) String() string {
	if l.Off() {
		return "no limit"
	}
	return fmt.Sprintf("%d per %s burst %d", l.Rate, l.Per, l.Burst)
}

// interval is the GCRA emission interval T: the steady gap between sends.
func (l Limit) interval() time.Duration { return l.Per / time.Duration(l.Rate) }

// Config is the worker's `rate_limit:` section: the limits the worker
// applies before every send. Its keys are named relative to the prefix
// given to Validate.
type Config struct {
	// Global is shared by every worker: the SMTP account's allowance.
	Global Limit `yaml:"global"`
	// PerRecipient applies to each address separately, whichever rule
	// mails it, so one busy page cannot flood one inbox.
	PerRecipient Limit `yaml:"per_recipient"`
}

// DefaultConfig returns the defaults documented in deploy/pagewatch.example.yaml.
func DefaultConfig() Config {
	return Config{
		// Well under what mail providers allow a single account.
		Global: Limit{Rate: 10, Per: time.Second, Burst: 20},
		// A page that crosses every few minutes still yields at most a
		// handful of mails in a row and then one every three minutes.
		PerRecipient: Limit{Rate: 20, Per: time.Hour, Burst: 5},
	}
}

// Validate reports every problem; prefix is the section's key, e.g.
// "worker.rate_limit".
func (c Config) Validate(prefix string) error {
	return errors.Join(
		c.Global.Validate(prefix+".global"),
		c.PerRecipient.Validate(prefix+".per_recipient"),
	)
}
