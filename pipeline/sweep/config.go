package sweep

import (
	"errors"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/pagewatch/pagewatch/domain/rules"
)

// Config is the `sweeper:` section.
type Config struct {
	Listen string `yaml:"listen"`
	// Schedule is a cron expression with optional seconds
	// ("*/10 * * * * *"), a descriptor ("@every 10s", "@hourly"), and an
	// optional CRON_TZ=Zone prefix.
	Schedule string `yaml:"schedule"`
	// Rules are written inline; RulesPath names a YAML file, or a
	// directory of *.yaml and *.yml files, with more (see rules.go). Both
	// are read again on SIGHUP and when a file changes; an invalid set is
	// rejected as a whole and the previous rules stay in force.
	Rules     []rules.Rule `yaml:"rules"`
	RulesPath string       `yaml:"rules_path"`
	// LagTolerance is how long after a calendar window closes hits for it
	// are still waited for: the window is judged that much later, so hits
	// that reach ClickHouse late still count. Rolling windows need none.
	LagTolerance time.Duration `yaml:"lag_tolerance"`
	// DataLateAfter is how old a site's newest loaded hit may be before
	// its data counts as late: drops are then not judged for its pages.
	// A site whose minutes have hits less often gets longer (sitehours.go).
	DataLateAfter time.Duration `yaml:"data_late_after"`
	// CatchUp is how far back a sweeper that was not running evaluates
	// what it missed: calendar windows that closed meanwhile, and rolling
	// windows at each minute that passed. 0 turns catching up off.
	CatchUp time.Duration `yaml:"catch_up"`
	// LeaderTTL is the leader lease: one sweeper replica sweeps at a time,
	// and another takes over within this long after it dies.
	LeaderTTL time.Duration `yaml:"leader_ttl"`
	// SweepTimeout bounds one sweep, so a stuck query cannot hold the
	// schedule (and the lease) for ever.
	SweepTimeout time.Duration `yaml:"sweep_timeout"`
}

// DefaultConfig returns the defaults documented in deploy/pagewatch.example.yaml.
func DefaultConfig() Config {
	return Config{
		Listen:        "127.0.0.1:9103",
		Schedule:      "@every 10s",
		LagTolerance:  2 * time.Minute,
		DataLateAfter: 10 * time.Minute,
		CatchUp:       24 * time.Hour,
		LeaderTTL:     15 * time.Second,
		SweepTimeout:  5 * time.Minute,
	}
}

// scheduleFields are the one syntax of pagewatch's schedules, the
// reports' too: an optional seconds field, as the config promises, and
// descriptors. A cron.Parser is only these fields, so one is made where
// it is used rather than kept in a package variable.
const scheduleFields = cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor

// ParseSchedule parses a cron line as the sweeper's schedule is parsed.
func ParseSchedule(spec string) (cron.Schedule, error) {
	return cron.NewParser(scheduleFields).Parse(spec)
}

// Validate reports every problem, naming its key, and compiles the inline
// rules. Rules under rules_path are checked by LoadRules.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if _, err := ParseSchedule(c.Schedule); err != nil {
		add("sweeper.schedule: %v", err)
	}
	if err := rules.ValidateAll("sweeper.rules", c.Rules); err != nil {
		errs = append(errs, err)
	}
	if c.DataLateAfter < time.Minute || c.DataLateAfter > 24*time.Hour {
		add("sweeper.data_late_after: must be 1m..24h, got %s", c.DataLateAfter)
	}
	if c.LagTolerance < 0 || c.LagTolerance > 24*time.Hour {
		add("sweeper.lag_tolerance: must be 0..24h, got %s", c.LagTolerance)
	}
	if c.CatchUp < 0 || c.CatchUp > 31*24*time.Hour {
		add("sweeper.catch_up: must be 0..744h (31 days), got %s", c.CatchUp)
	}
	if c.LeaderTTL < time.Second {
		add("sweeper.leader_ttl: must be at least 1s, got %s", c.LeaderTTL)
	}
	if c.SweepTimeout < time.Second {
		add("sweeper.sweep_timeout: must be at least 1s, got %s", c.SweepTimeout)
	}
	return errors.Join(errs...)
}
