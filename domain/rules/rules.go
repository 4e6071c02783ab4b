// Package rules defines the sweeper's rule language: which pages a rule
// watches, the thresholds it fires at, over which window, how it re-arms,
// and whom it notifies. It parses and validates rules decoded from the
// `sweeper.rules` list and answers pure questions about them (does this
// page match, what are the current window's bounds, which thresholds fire
// now). It talks to neither NATS nor ClickHouse: the sweeper does the
// counting and keeps the State between sweeps.
//
// The YAML shape, one rule per list item (every key but name, site, match,
// threshold, window and notify.recipients is optional):
//
//	sweeper:
//	  rules:
//	    - name: blog-hot                # [a-z0-9_-], unique; part of crossing keys
//	      site: example.com
//	      match:                        # exactly one of exact, prefix, glob, regex
//	        glob: /blog/*               # * = one segment, ** = any number of segments
//	      aggregate: per_page           # per_page (default): each page crosses on its own;
//	                                    # sum: the matched pages' counts are added up
//	      threshold: 1000               # one number, or milestones: [100, 1000, 10000]
//	      window: 1h                    # rolling (5m, 1h, 24h), day, week, month, or all
//	      count: views                  # views (default) or visitors: distinct clients
//	      clients:                      # spike, new_page, unusual: on by default
//	        max_top_share: 0.5          # no fire when one client sent more than half
//	        max_unknown_share: 0.5      # ... or unidentified clients more than half
//	      zone: Europe/Berlin           # calendar windows, same-hour normals; auto: learned per site (unusual); default UTC
//	      rearm:                        # rolling windows with one threshold only
//	        hysteresis: 0.1             # re-arm once the count is back to 900 or below
//	        cooldown: 6h                # ... or 6h after firing, whichever comes first
//	      notify:
//	        recipients: [ops@example.com]
//	        labels: {team: web}
//	        subject: "{{.Path}} passed {{.Threshold}} views ({{.Labels.team}})"
//	        body: "{{.Count}} views in {{.Window}}."
//	      storm_guard:
//	        max_individual: 20          # crossings per sweep mailed one by one; default 20
//
// Semantics in one place:
//   - A threshold T is crossed when the count is above T ("passed 1,000
//     views" means 1,001 or more), as the sweeper has always counted.
//   - A rolling window with one threshold fires on the rising edge and then
//     stays quiet until it re-arms: when the count falls to T×(1−hysteresis)
//     or below (hysteresis 0: back to T or below), or when cooldown has
//     passed since it fired (cooldown 0: never), whichever comes first.
//   - A calendar window (day, week, month in the rule's zone) fires each
//     threshold at most once per window; the next window starts fresh.
//   - Milestones (a list of two or more thresholds) and all-time windows
//     never fire the same threshold twice (per calendar window, for
//     calendar windows). Several milestones crossed in one sweep all fire.
package rules

import (
	"fmt"
	"regexp"
	"text/template"
	"time"

	"gopkg.in/yaml.v3"
)

// Rule is one entry of `sweeper.rules`. Validate (or ValidateAll) must be
// called before Matches or the templates are used: it compiles them.
type Rule struct {
	Name string `yaml:"name"`
	// Site is the site whose pages the rule watches; empty means every
	// site (each page still crosses on its own).
	Site string `yaml:"site"`
	// Match selects the pages of Site the rule watches.
	Match Match `yaml:"match"`
	// Path is shorthand for match: {exact: Path}, the commonest rule.
	Path string `yaml:"path,omitempty"`
	// Aggregate says whether each matched page crosses on its own or the
	// sum over all matched pages does. Empty means per_page.
	Aggregate Aggregate `yaml:"aggregate"`
	// Thresholds is one threshold, or milestones in strictly increasing
	// order. YAML takes a number or a list.
	Thresholds Thresholds `yaml:"threshold"`
	// Spike, NewPage and Unusual make the rule judge each page against
	// its own past instead of a threshold; exactly one of threshold,
	// spike, new_page and unusual is set. Each is a Detector (detector.go).
	Spike   *Spike   `yaml:"spike,omitempty"`
	NewPage *NewPage `yaml:"new_page,omitempty"`
	// Unusual judges each page against the normal of its own week, up
	// and down, on two time scales (unusual.go): the shipped default.
	Unusual *Unusual `yaml:"unusual,omitempty"`
	Window  Window   `yaml:"window"`
	// Count is what the rule counts: views (the default) or visitors
	// (clients.go).
	Count Count `yaml:"count,omitempty"`
	// Clients keeps the rule from firing on a surge one client, or
	// unidentified clients, made (clients.go).
	Clients ClientGuard `yaml:"clients,omitempty"`
	// Zone is the IANA time zone calendar windows are cut in and normals
	// of the same hour on past days are read on ("" = UTC); ZoneAuto (an
	// unusual rule's) reads each site's learned clocks instead. Validate
	// loads a named zone into Window.Zone.
	Zone       string     `yaml:"zone"`
	Rearm      Rearm      `yaml:"rearm"`
	Notify     Notify     `yaml:"notify"`
	StormGuard StormGuard `yaml:"storm_guard"`
	// Escalate lists multiples of the level an episode fired at (the
	// threshold, or factor × baseline): one more message at each step the
	// same episode reaches. Empty: none.
	Escalate []float64 `yaml:"escalate,omitempty"`
	// NotifyOn says which of an episode's messages are sent: fire,
	// escalate, resolve ("back to normal", with the episode's peak and
	// total). Empty means [fire, escalate].
	NotifyOn []Event `yaml:"notify_on,omitempty"`

	// Compiled by Validate. Unexported and untagged, so config decoding and
	// printing never see them.
	matcher matcher
	det     Detector
	subject *template.Template
	body    *template.Template
}

// Match is how paths are selected; exactly one field is set.
type Match struct {
	// Exact is one path, compared byte for byte.
	Exact string `yaml:"exact"`
	// Prefix is a byte prefix: "/blog" also matches "/blogroll"; use the
	// glob "/blog/**" for the directory.
	Prefix string `yaml:"prefix"`
	// Glob is matched segment by segment (segments are what lies between
	// slashes): "*" alone is exactly one non-empty segment, "*" inside a
	// segment ("*.html", "post-*") is any run of characters other than
	// "/", and "**" (a whole segment) is any number of segments, none
	// included. "/docs/**" matches "/docs", "/docs/" and "/docs/a/b";
	// "/blog/*" matches "/blog/x" but not "/blog/" or "/blog/x/y".
	// Everything else is literal; there are no ?, [] or {} classes.
	Glob string `yaml:"glob"`
	// Regex is an RE2 expression (Go regexp syntax) that must match the
	// whole path: it is anchored at both ends. At most MaxRegexLen bytes.
	Regex string `yaml:"regex"`
}

// Aggregate is per_page or sum.
type Aggregate string

// The aggregates, as written in YAML.
const (
	PerPage Aggregate = "per_page"
	Sum     Aggregate = "sum"
)

// Thresholds is one threshold or a list of milestones. In YAML it is a
// number or a list of numbers.
type Thresholds []uint64

// Milestones reports whether the thresholds are a milestone list, which
// never re-arms.
func (t Thresholds) Milestones() bool { return len(t) > 1 }

// UnmarshalYAML takes `threshold: 1000` or `threshold: [100, 1000]`.
func (t *Thresholds) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var v uint64
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("want a whole number of views or a list of them, got %q", n.Value)
		}
		*t = Thresholds{v}
		return nil
	case yaml.SequenceNode:
		out := make(Thresholds, len(n.Content))
		for i, item := range n.Content {
			if err := item.Decode(&out[i]); err != nil {
				return fmt.Errorf("[%d]: want a whole number of views, got %q", i, item.Value)
			}
		}
		*t = out
		return nil
	}
	return fmt.Errorf("want a number or a list of numbers")
}

// MarshalYAML writes a single threshold as a number, the way it was likely
// written.
func (t Thresholds) MarshalYAML() (any, error) {
	if len(t) == 1 {
		return t[0], nil
	}
	return []uint64(t), nil
}

// Rearm says when a rolling single-threshold rule may fire again.
type Rearm struct {
	// Hysteresis in [0, 1): the rule re-arms when the count is at or below
	// threshold × (1 − Hysteresis), so a count hovering at the threshold
	// does not fire every other sweep.
	Hysteresis float64 `yaml:"hysteresis"`
	// Cooldown, when set, re-arms the rule that long after it fired even
	// if the count stayed high: a reminder that it still is.
	Cooldown time.Duration `yaml:"cooldown"`
	// Settle is how long an episode's count must stay back at the re-arm
	// level before the episode ends (and resolves): a story that pauses
	// for an hour and surges again is one episode, not two. Episodes only.
	Settle time.Duration `yaml:"settle,omitempty"`
}

// Notify is who hears about a crossing and what they read.
type Notify struct {
	Recipients []string `yaml:"recipients"`
	// Receivers, when given, are where this rule's crossings go (names
	// from the top-level receivers: list), in place of worker.routing.
	// Recipients are then needed only if one of them is email.
	Receivers []string          `yaml:"receivers"`
	Labels    map[string]string `yaml:"labels"`
	// Subject and Body are text/template templates over TemplateData; empty
	// means the mailer's default. They are compiled and run against a
	// sample at validation, so a typo fails at start, not at the first
	// crossing.
	Subject string `yaml:"subject"`
	Body    string `yaml:"body"`
}

// StormGuard bounds the mail one sweep can cause: beyond MaxIndividual
// crossings of one rule in one sweep, the rest go out as one summary.
type StormGuard struct {
	// MaxIndividual is the number of crossings mailed one by one; 0 means
	// DefaultMaxIndividual.
	MaxIndividual int `yaml:"max_individual"`
}

// DefaultMaxIndividual is the storm guard's limit when none is configured:
// a glob over a whole site should not mail a thousand times in one sweep.
const DefaultMaxIndividual = 20

// Limit is the effective MaxIndividual.
func (g StormGuard) Limit() int {
	if g.MaxIndividual <= 0 {
		return DefaultMaxIndividual
	}
	return g.MaxIndividual
}

// SplitStorm returns the crossings to mail one by one and those to fold
// into a summary, keeping their order (callers sort by importance first,
// e.g. by count).
func SplitStorm[T any](g StormGuard, crossings []T) (individual, folded []T) {
	k := g.Limit()
	if len(crossings) <= k {
		return crossings, nil
	}
	return crossings[:k], crossings[k:]
}

// Limits on what a rule may contain, so a config cannot make matching slow.
const (
	MaxRegexLen     = 1024
	MaxGlobSegments = 32 // the glob runs on a 64-bit set of positions
	MaxTemplateLen  = 8192
)

var (
	ruleNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	// receiverNameRE is how receivers are named (pipeline/notify.NamePattern).
	receiverNameRE = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)
	labelRE        = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
)
