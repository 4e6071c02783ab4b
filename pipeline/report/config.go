package report

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/pagewatch/pagewatch/pipeline/sweep"
)

// Periods a report covers.
const (
	PeriodDay   = "day"
	PeriodWeek  = "week" // Monday to Monday
	PeriodMonth = "month"
)

// Spec is one entry of the `reports:` list.
type Spec struct {
	// Name identifies the report ([a-z0-9_-], at most 64): in its key,
	// subject and metrics.
	Name string `yaml:"name"`
	// Site is the site reported on.
	Site string `yaml:"site"`
	// Schedule is when it is sent: cron (5 fields, or 6 with seconds, or
	// @daily and friends), in Zone.
	Schedule string `yaml:"schedule"`
	// Period is what it covers: the last whole day, week (from Monday)
	// or month in Zone before the time it runs, against the one before.
	Period string `yaml:"period"`
	// Zone is the IANA time zone of the schedule and the periods.
	Zone string `yaml:"zone"`
	// Top is how many pages each list shows.
	Top int `yaml:"top"`
	// Milestones are all-time view counts worth telling when a page
	// reaches one.
	Milestones []uint64 `yaml:"milestones"`
	// Receivers are the receivers (the receivers: section) it goes to.
	Receivers []string `yaml:"receivers"`
	// To, for email receivers, are the addresses; empty: the receiver's
	// own to.
	To []string `yaml:"to"`
}

// DefaultTop is how many pages a Spec lists when it leaves top out.
const DefaultTop = 10

// DefaultMilestones are 1,000, 10,000, 100,000 and 1,000,000 views.
func DefaultMilestones() []uint64 { return []uint64{1_000, 10_000, 100_000, 1_000_000} }

// WithDefaults fills the keys left out.
func (s Spec) WithDefaults() Spec {
	if s.Zone == "" {
		s.Zone = "UTC"
	}
	if s.Top == 0 {
		s.Top = DefaultTop
	}
	if s.Milestones == nil {
		s.Milestones = DefaultMilestones()
	}
	return s
}

var nameRE = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// Validate checks the list; receivers are the receivers' names.
func Validate(specs []Spec, receivers []string) error {
	var errs []error
	seen := map[string]bool{}
	for i, s := range specs {
		s = s.WithDefaults()
		key := fmt.Sprintf("reports[%d]", i)
		add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(key+"."+format, args...)) }
		switch {
		case !nameRE.MatchString(s.Name):
			add("name: must match %s, got %q", nameRE, s.Name)
		case seen[s.Name]:
			add("name: %q given twice", s.Name)
		}
		seen[s.Name] = true
		if s.Site == "" {
			add("site: must be set")
		}
		loc, err := time.LoadLocation(s.Zone)
		if err != nil {
			add("zone: %v", err)
		}
		if _, err := sweep.ParseSchedule(s.Schedule); err != nil {
			add("schedule: %v", err)
		} else if loc != nil {
			if _, err := s.schedule(loc); err != nil {
				add("schedule: %v", err)
			}
		}
		switch s.Period {
		case PeriodDay, PeriodWeek, PeriodMonth:
		default:
			add("period: must be day, week or month, got %q", s.Period)
		}
		if s.Top < 1 || s.Top > 100 {
			add("top: must be 1..100, got %d", s.Top)
		}
		if len(s.Milestones) > 32 || slices.Contains(s.Milestones, 0) {
			add("milestones: at most 32, each above 0")
		}
		if len(s.Receivers) == 0 {
			add("receivers: name at least one")
		}
		for _, r := range s.Receivers {
			if !slices.Contains(receivers, r) {
				add("receivers: no receiver named %q", r)
			}
		}
	}
	return errors.Join(errs...)
}

// schedule parses the cron line in loc, in the sweeper's syntax.
func (s Spec) schedule(loc *time.Location) (cron.Schedule, error) {
	return sweep.ParseSchedule("CRON_TZ=" + loc.String() + " " + s.Schedule)
}
