package sweep

import (
	"errors"
	"fmt"
	"net/mail"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Config is the `sweeper:` section.
type Config struct {
	Listen string `yaml:"listen"`
	// Schedule is a cron expression with optional seconds
	// ("*/10 * * * * *") or a descriptor ("@every 10s", "@hourly").
	Schedule string `yaml:"schedule"`
	Rules    []Rule `yaml:"rules"`
}

// Rule is "page P on site S had more than Threshold hits in Window".
type Rule struct {
	Name      string `yaml:"name"`
	Site      string `yaml:"site"`
	Path      string `yaml:"path"`
	Threshold uint64 `yaml:"threshold"`
	// Window is a rolling duration ("1h", "24h") or "all" for all time.
	// A rolling rule fires again after its count fell back to the
	// threshold or below; an all-time rule fires once, ever.
	Window     string   `yaml:"window"`
	Recipients []string `yaml:"recipients"`
}

// DefaultConfig returns the defaults documented in deploy/pagewatch.example.yaml.
func DefaultConfig() Config {
	return Config{Listen: "127.0.0.1:9103", Schedule: "@every 10s"}
}

// cronParser accepts an optional seconds field, as the config promises.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

var ruleNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Validate reports every problem, naming its key.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if _, err := cronParser.Parse(c.Schedule); err != nil {
		add("sweeper.schedule: %v", err)
	}
	names := map[string]bool{}
	for i, r := range c.Rules {
		key := fmt.Sprintf("sweeper.rules[%d]", i)
		if !ruleNameRE.MatchString(r.Name) {
			add("%s.name: must match %s, got %q", key, ruleNameRE, r.Name)
		} else if names[r.Name] {
			add("%s.name: %q used by another rule", key, r.Name)
		}
		names[r.Name] = true
		if !strings.HasPrefix(r.Path, "/") {
			add("%s.path: must start with /, got %q", key, r.Path)
		}
		if r.Threshold == 0 {
			add("%s.threshold: must be at least 1", key)
		}
		if _, _, err := r.window(); err != nil {
			add("%s.window: %v", key, err)
		}
		if len(r.Recipients) == 0 {
			add("%s.recipients: at least one address is needed", key)
		}
		for j, a := range r.Recipients {
			if _, err := mail.ParseAddress(a); err != nil {
				add("%s.recipients[%d]: %v", key, j, err)
			}
		}
	}
	return errors.Join(errs...)
}

// window returns the rolling duration, or allTime.
func (r Rule) window() (d time.Duration, allTime bool, err error) {
	if r.Window == "all" {
		return 0, true, nil
	}
	d, err = time.ParseDuration(r.Window)
	if err != nil {
		return 0, false, fmt.Errorf(`want a duration like "1h" or "all", got %q`, r.Window)
	}
	if d < time.Minute {
		return 0, false, fmt.Errorf("must be at least 1m (counts are per minute), got %s", d)
	}
	return d, false, nil
}

// windowText is how a window reads in a mail.
func (r Rule) windowText() string {
	if r.Window == "all" {
		return "all time"
	}
	return r.Window
}
