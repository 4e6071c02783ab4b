package rules

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/mail"
	"slices"
	"time"
)

// ValidateAll validates and compiles every rule of the list at key (e.g.
// "sweeper.rules"), in place, and checks names are unique. It reports
// every problem, each named by its key path:
// `sweeper.rules[3].match.glob: "**" must be a whole segment ...`.
func ValidateAll(key string, rules []Rule) error {
	var errs []error
	names := make(map[string]int, len(rules))
	for i := range rules {
		k := fmt.Sprintf("%s[%d]", key, i)
		if j, dup := names[rules[i].Name]; dup && rules[i].Name != "" {
			errs = append(errs, fmt.Errorf("%s.name: %q is already the name of %s[%d]", k, rules[i].Name, key, j))
		} else {
			names[rules[i].Name] = i
		}
		if err := rules[i].Validate(k); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Validate checks the rule and compiles its match, zone and templates into
// it. key is the rule's path in the config, e.g. "sweeper.rules[3]".
func (r *Rule) Validate(key string) error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s%s: %s", key, field, fmt.Sprintf(format, args...)))
	}

	if !ruleNameRE.MatchString(r.Name) {
		add(".name", "must match %s, got %q", ruleNameRE, r.Name)
	}
	if r.Path != "" {
		if r.Match != (Match{}) && r.Match != (Match{Exact: r.Path}) {
			add(".path", "is shorthand for match.exact; give one or the other, not both")
		}
		r.Match = Match{Exact: r.Path}
	}
	if m, err := compileMatch(r.Match); err != nil {
		errs = append(errs, fmt.Errorf("%s.match%w", key, err))
	} else {
		r.matcher = m
	}
	switch r.Aggregate {
	case "":
		r.Aggregate = PerPage // so the effective config shows it
	case PerPage, Sum:
	default:
		add(".aggregate", "must be per_page or sum, got %q", r.Aggregate)
	}

	r.validateKinds(add)
	r.validateClients(add)
	for i, t := range r.Thresholds {
		field := ".threshold"
		if len(r.Thresholds) > 1 {
			field = fmt.Sprintf(".threshold[%d]", i)
		}
		switch {
		case t == 0:
			add(field, "must be at least 1")
		case i > 0 && t <= r.Thresholds[i-1]:
			add(field, "milestones must be strictly increasing, got %d after %d", t, r.Thresholds[i-1])
		}
	}

	windowOK := true
	if err := r.Window.check(); err != nil {
		add(".window", "%v", err)
		windowOK = false
	}
	sameTime := (r.Spike != nil && r.Spike.Baseline.SameTime != nil) || r.Unusual != nil
	switch {
	case r.Zone != "" && windowOK && r.Window.Kind != Calendar && !sameTime:
		add(".zone", "only calendar windows (day, week, month), unusual rules and same_time baselines have a zone; window is %s", r.Window)
	case r.Zone == ZoneAuto:
		if r.Unusual == nil {
			add(".zone", "auto (each site's clocks learned from its traffic) is for unusual rules; name a zone like Europe/Berlin")
		}
	case r.Zone != "":
		loc, err := time.LoadLocation(r.Zone)
		if err != nil {
			add(".zone", "unknown time zone %q (want an IANA name like Europe/Berlin)", r.Zone)
		} else {
			r.Window.Zone = loc
		}
	}

	r.validateKind(add, windowOK)
	r.det = r.newDetector()

	h := r.Rearm.Hysteresis
	if math.IsNaN(h) || h < 0 || h >= 1 {
		add(".rearm.hysteresis", "must be in [0, 1), got %v", h)
	}
	if r.Rearm.Cooldown < 0 {
		add(".rearm.cooldown", "must not be negative, got %s", r.Rearm.Cooldown)
	}
	// A setting that can never take effect is a misunderstanding worth
	// reporting, not ignoring.
	if (h != 0 || r.Rearm.Cooldown != 0) && windowOK && r.Kind() == KindThreshold && (r.Window.Kind != Rolling || r.Thresholds.Milestones()) {
		add(".rearm", "only rolling windows with a single threshold re-arm; calendar windows fire once per window, milestones and all-time windows once")
	}

	if len(r.Notify.Recipients) == 0 && len(r.Notify.Receivers) == 0 {
		add(".notify.recipients", "at least one address is needed (or name the rule's receivers)")
	}
	seenReceiver := map[string]bool{}
	for i, name := range r.Notify.Receivers {
		switch {
		case !receiverNameRE.MatchString(name):
			add(fmt.Sprintf(".notify.receivers[%d]", i), "a receiver's name, matching %s, got %q", receiverNameRE, name)
		case seenReceiver[name]:
			add(fmt.Sprintf(".notify.receivers[%d]", i), "%q is named twice", name)
		}
		seenReceiver[name] = true
	}
	for i, a := range r.Notify.Recipients {
		if _, err := mail.ParseAddress(a); err != nil {
			add(fmt.Sprintf(".notify.recipients[%d]", i), "%v", err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(r.Notify.Labels)) {
		if !labelRE.MatchString(k) {
			add(".notify.labels."+k, "label names must match %s, so templates can use {{.Labels.name}}", labelRE)
		}
	}
	sample := r.Sample()
	if t, err := compileTemplate("subject", r.Notify.Subject, sample); err != nil {
		add(".notify.subject", "%v", err)
	} else {
		r.subject = t
	}
	if t, err := compileTemplate("body", r.Notify.Body, sample); err != nil {
		add(".notify.body", "%v", err)
	} else {
		r.body = t
	}

	if r.StormGuard.MaxIndividual < 0 {
		add(".storm_guard.max_individual", "must not be negative, got %d", r.StormGuard.MaxIndividual)
	}
	return errors.Join(errs...)
}
