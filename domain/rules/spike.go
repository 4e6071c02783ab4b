package rules

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Kind is what makes a rule fire: a fixed threshold, a page's count
// against its own normal (spike), or a page with no past taking off
// (new_page). A rule has the kind of the one key it sets of threshold,
// spike and new_page.
type Kind string

// The kinds of rule, as Rule.Kind reports them.
const (
	KindThreshold Kind = "threshold"
	KindSpike     Kind = "spike"
	KindNewPage   Kind = "new_page"
	KindUnusual   Kind = "unusual"
)

// Spike fires when a page's count over the rule's window is far from the
// page's own normal (its baseline), so one rule fits pages of every size
// and rhythm:
//
//	spike:
//	  factor: 4                  # up: count >= 4 × baseline; down: count <= baseline / 4
//	  min_count: 60              # and at least this many views (down: a baseline of at least this)
//	  direction: up              # up (default), down, both
//	  baseline:                  # exactly one of:
//	    same_time: {days: 7}     #   the same window at the same time of day over the last 7 days,
//	                             #   and/or of week over the last N weeks: {weeks: 4}; DST-aware (zone)
//	    # trailing: 7d           #   the median of this window's count at every hour of the last 7 days
//	    # zscore: {k: 3.5, windows: 24}  # robust z-score (median/MAD) over the last 24 windows
type Spike struct {
	Factor    float64   `yaml:"factor"`
	MinCount  uint64    `yaml:"min_count"`
	Direction Direction `yaml:"direction"`
	Baseline  Baseline  `yaml:"baseline"`
}

// Direction is which way a spike rule looks.
type Direction string

// The directions, as written in YAML.
const (
	Up   Direction = "up"
	Down Direction = "down" // "went quiet"
	Both Direction = "both"
)

// Baseline is how a page's normal is computed; exactly one field is set.
type Baseline struct {
	SameTime *SameTime `yaml:"same_time,omitempty"`
	// Trailing is a period: the baseline is the median of the window's
	// count ending at each whole hour of it, which a few past spikes
	// cannot move.
	Trailing Span    `yaml:"trailing,omitempty"`
	ZScore   *ZScore `yaml:"zscore,omitempty"`
}

// SameTime takes the window at the same wall-clock time on each of the
// last Days days and in each of the last Weeks weeks (both may be set,
// then the samples are pooled). The baseline is their median.
type SameTime struct {
	Days  int `yaml:"days,omitempty"`
	Weeks int `yaml:"weeks,omitempty"`
}

// ZScore compares the count with the median of the last Windows windows
// before it, in units of their spread (1.4826 × the median absolute
// deviation, at least the square root of the median, which is the noise
// of a count): it fires when (count − median) / spread >= K (down: the
// other way), on top of factor and min_count.
type ZScore struct {
	K       float64 `yaml:"k"`
	Windows int     `yaml:"windows,omitempty"`
}

// DefaultZScoreWindows is zscore.windows when not given: a day of hourly
// windows.
const DefaultZScoreWindows = 24

// Event is one kind of message an episode sends.
type Event string

// The events, as written in notify_on.
const (
	EventFire     Event = "fire"
	EventEscalate Event = "escalate"
	EventResolve  Event = "resolve"
)

// Notifies reports whether the rule sends messages of this kind. By
// default a rule sends fire and escalate messages, and resolve only when
// notify_on asks for it.
func (r *Rule) Notifies(e Event) bool {
	if len(r.NotifyOn) == 0 {
		return e != EventResolve
	}
	for _, x := range r.NotifyOn {
		if x == e {
			return true
		}
	}
	return false
}

// Episodic reports whether the rule runs episodes with escalate and
// resolve steps: spike and new_page rules always, rolling single-threshold
// rules when they set escalate or notify on resolve.
func (r *Rule) Episodic() bool {
	if r.Kind() != KindThreshold {
		return true
	}
	return len(r.Escalate) > 0 || r.Notifies(EventResolve)
}

// Span is a length of time written "30d", "7d" or as a Go duration
// ("36h", "90m"): time.ParseDuration has no days.
type Span time.Duration

// ParseSpan reads "30d" or a Go duration.
func ParseSpan(s string) (Span, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf(`want a whole number of days like "7d" or a duration like "36h", got %q`, s)
		}
		return Span(time.Duration(n) * 24 * time.Hour), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf(`want a whole number of days like "7d" or a duration like "36h", got %q`, s)
	}
	return Span(d), nil
}

// UnmarshalYAML takes "7d" or "36h".
func (s *Span) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf(`want a period like "7d"`)
	}
	v, err := ParseSpan(n.Value)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// MarshalYAML writes days when the span is whole days.
func (s Span) MarshalYAML() (any, error) { return s.String(), nil }

func (s Span) String() string {
	d := time.Duration(s)
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	}
	return formatDuration(d)
}

// IsZero lets omitempty leave an unset span out.
func (s Span) IsZero() bool { return s == 0 }

// Limits on baselines, so a rule cannot make a sweep read years of hours.
const (
	MaxSameTimeDays  = 31
	MaxSameTimeWeeks = 12
	MaxTrailing      = 31 * 24 * time.Hour
	MaxZScoreWindows = 24 * 14
	MaxLookback      = 400 * 24 * time.Hour
	MaxSpikeWindow   = 7 * 24 * time.Hour
)

// validateKinds checks that exactly one of threshold, spike and new_page
// is set.
func (r *Rule) validateKinds(add func(field, format string, args ...any)) {
	kinds := 0
	if len(r.Thresholds) > 0 {
		kinds++
	}
	if r.Spike != nil {
		kinds++
	}
	if r.NewPage != nil {
		kinds++
	}
	if r.Unusual != nil {
		kinds++
	}
	switch {
	case kinds == 0:
		add(".threshold", "required: a number of views, or a list of milestones (or give unusual, spike or new_page instead)")
	case kinds > 1:
		add("", "give one of threshold, unusual, spike and new_page, not %d of them", kinds)
	}
}

// validateKind checks what is particular to spike and new_page rules, and
// the episode settings every kind may have. add reports a problem at a
// key under the rule.
func (r *Rule) validateKind(add func(field, format string, args ...any), windowOK bool) {
	if r.Kind() != KindThreshold {
		if windowOK && r.Window.Kind != Rolling {
			add(".window", "%s rules need a rolling window (like 1h), got %s", r.Kind(), r.Window)
		} else if windowOK && (r.Window.Rolling%time.Hour != 0 || r.Window.Rolling > MaxSpikeWindow) {
			add(".window", "%s rules count whole hours, 1h to %s (baselines are kept per hour), got %s", r.Kind(), formatDuration(MaxSpikeWindow), r.Window)
		}
		if r.Aggregate == Sum {
			add(".aggregate", "%s rules judge each page against its own past: per_page only", r.Kind())
		}
		if r.Rearm.Cooldown != 0 {
			add(".rearm.cooldown", "%s episodes end when the page is back to normal (see rearm.settle), not after a cooldown", r.Kind())
		}
	}
	if r.Spike != nil {
		r.validateSpike(add)
	}
	if r.Unusual != nil && windowOK && r.Window.Kind == Rolling {
		r.validateUnusual(add)
	}
	if p := r.NewPage; p != nil {
		if p.MinCount == 0 {
			add(".new_page.min_count", "required: at least 1")
		}
		switch {
		case p.Lookback == 0:
			add(".new_page.lookback", `required: how long the page must have had no views, like "30d"`)
		case time.Duration(p.Lookback) < time.Hour || time.Duration(p.Lookback)%time.Hour != 0 || time.Duration(p.Lookback) > MaxLookback:
			add(".new_page.lookback", "must be whole hours from 1h to %dd, got %s", MaxLookback/(24*time.Hour), p.Lookback)
		}
	}
	if r.Rearm.Settle < 0 {
		add(".rearm.settle", "must not be negative, got %s", r.Rearm.Settle)
	}
	if r.Rearm.Settle != 0 && r.Kind() == KindThreshold && !r.Episodic() {
		add(".rearm.settle", "only episodes settle: spike and new_page rules, or threshold rules with escalate or notify_on resolve")
	}
	for i, e := range r.Escalate {
		switch {
		case !(e > 1) || e > 1e6:
			add(fmt.Sprintf(".escalate[%d]", i), "a step is a multiple of the level the episode fired at, above 1, got %v", e)
		case i > 0 && e <= r.Escalate[i-1]:
			add(fmt.Sprintf(".escalate[%d]", i), "steps must be strictly increasing, got %v after %v", e, r.Escalate[i-1])
		}
	}
	for i, e := range r.NotifyOn {
		if e != EventFire && e != EventEscalate && e != EventResolve {
			add(fmt.Sprintf(".notify_on[%d]", i), "must be fire, escalate or resolve, got %q", e)
		}
	}
	if r.Kind() == KindThreshold && r.Episodic() && windowOK && (r.Window.Kind != Rolling || r.Thresholds.Milestones()) {
		add(".escalate", "threshold rules run episodes (escalate, resolve) only with a rolling window and one threshold")
	}
}

func (r *Rule) validateSpike(add func(field, format string, args ...any)) {
	s := r.Spike
	if !(s.Factor > 1) || s.Factor > 1e6 {
		add(".spike.factor", "required: a multiple of the baseline above 1 (like 3), got %v", s.Factor)
	}
	if s.MinCount == 0 {
		add(".spike.min_count", "required: at least 1, so a page going from 1 view to 3 does not fire")
	}
	switch s.Direction {
	case "":
		s.Direction = Up // so the effective config shows it
	case Up, Down, Both:
	default:
		add(".spike.direction", "must be up, down or both, got %q", s.Direction)
	}
	b := s.Baseline
	set := 0
	if b.SameTime != nil {
		set++
		st := b.SameTime
		if st.Days < 0 || st.Days > MaxSameTimeDays {
			add(".spike.baseline.same_time.days", "must be 0..%d, got %d", MaxSameTimeDays, st.Days)
		}
		if st.Weeks < 0 || st.Weeks > MaxSameTimeWeeks {
			add(".spike.baseline.same_time.weeks", "must be 0..%d, got %d", MaxSameTimeWeeks, st.Weeks)
		}
		if st.Days == 0 && st.Weeks == 0 {
			add(".spike.baseline.same_time", "give days, weeks or both, like {weeks: 4}")
		}
	}
	if b.Trailing != 0 {
		set++
		d := time.Duration(b.Trailing)
		if d < 24*time.Hour || d > MaxTrailing || d%time.Hour != 0 {
			add(".spike.baseline.trailing", "must be whole hours from 1d to %dd, got %s", MaxTrailing/(24*time.Hour), b.Trailing)
		}
	}
	if z := b.ZScore; z != nil {
		set++
		if !(z.K > 0) || z.K > 1000 {
			add(".spike.baseline.zscore.k", "required: a number of robust standard deviations above 0, like 3.5, got %v", z.K)
		}
		if z.Windows == 0 {
			z.Windows = DefaultZScoreWindows
		}
		if z.Windows < 4 || z.Windows > MaxZScoreWindows {
			add(".spike.baseline.zscore.windows", "must be 4..%d, got %d", MaxZScoreWindows, z.Windows)
		}
	}
	if set != 1 {
		add(".spike.baseline", "exactly one of same_time, trailing, zscore must be set")
	}
}

// spikeDetector judges a page's count against a multiple of the median
// of its past windows (or a robust z-score over them).
type spikeDetector struct{ r *Rule }

func (d *spikeDetector) Kind() Kind   { return KindSpike }
func (d *spikeDetector) Reach() Reach { return Reach{} }
func (d *spikeDetector) LooksDown() bool {
	return d.r.Spike.Direction != Up && d.r.Spike.Direction != ""
}

// QuietBelow: below min_count × (1 − hysteresis) nothing fires and an
// episode is back; 0 when the rule looks down.
func (d *spikeDetector) QuietBelow() uint64 {
	if d.LooksDown() {
		return 0
	}
	return uint64(math.Ceil(float64(d.r.Spike.MinCount) * (1 - d.r.Rearm.Hysteresis)))
}

func (d *spikeDetector) Spans(end, dataStart time.Time) []Interval {
	r := d.r
	w := r.Window.Rolling
	floor := end.UTC().Truncate(time.Hour)
	var out []Interval
	add := func(to time.Time) {
		from := to.Add(-w)
		if !from.Before(dataStart) {
			out = append(out, Interval{From: from, To: to})
		}
	}
	b := r.Spike.Baseline
	switch {
	case b.SameTime != nil:
		// The nearest whole hour: a window ending at 14:37 is compared
		// with those ending at 15:00 on past days, at most half an hour
		// off either way.
		near := end.UTC().Round(time.Hour).In(r.Window.zone())
		y, m, dd := near.Date()
		hh, mm := near.Hour(), near.Minute()
		// The same wall-clock time k days or weeks back, in the rule's
		// zone: across a DST change that is 23 or 25 hours per day away.
		for k := 1; k <= b.SameTime.Days; k++ {
			add(time.Date(y, m, dd-k, hh, mm, 0, 0, near.Location()).UTC().Truncate(time.Hour))
		}
		for k := 1; k <= b.SameTime.Weeks; k++ {
			if k*7 <= b.SameTime.Days {
				continue // already taken as a day
			}
			add(time.Date(y, m, dd-7*k, hh, mm, 0, 0, near.Location()).UTC().Truncate(time.Hour))
		}
	case b.Trailing != 0:
		// The window ending at every whole hour of the trailing period
		// before the current window.
		last := floor.Add(-w)
		n := int(time.Duration(b.Trailing) / time.Hour)
		for j := 0; j < n; j++ {
			add(last.Add(-time.Duration(j) * time.Hour))
		}
	case b.ZScore != nil:
		// The windows before the current one, end to end.
		for j := 1; j <= b.ZScore.Windows; j++ {
			add(floor.Add(-time.Duration(j-1) * w))
		}
	}
	return out
}

// minSamples is how many known windows a baseline needs: half of what the
// rule asks for, rounded up, so a page that is one week old can already
// be judged by a rule over four, but not by a single past day.
func (d *spikeDetector) minSamples() int {
	b := d.r.Spike.Baseline
	switch {
	case b.SameTime != nil:
		n := b.SameTime.Days
		for k := 1; k <= b.SameTime.Weeks; k++ {
			if k*7 > b.SameTime.Days {
				n++
			}
		}
		return (n + 1) / 2
	case b.Trailing != 0:
		return int(time.Duration(b.Trailing)/time.Hour+1) / 2
	case b.ZScore != nil:
		return (b.ZScore.Windows + 1) / 2
	}
	return 0
}

// Expect is the median of the counts, in any order, with their spread.
func (d *spikeDetector) Expect(_ []Interval, counts []uint64, _ Trend) Expected {
	if len(counts) < d.minSamples() || len(counts) == 0 {
		return Expected{Samples: len(counts)}
	}
	xs := make([]float64, len(counts))
	for i, c := range counts {
		xs[i] = float64(c)
	}
	med := median(xs)
	scale := max(1.4826*mad(xs, med), math.Sqrt(med), 1)
	// The median is the whole normal: Bottom and Top are it (the sweep
	// sums pages' Bottoms into the views a minute a site expects, which
	// tells a quiet site from a late one).
	return Expected{Value: med, Bottom: med, Top: med, Scale: scale, Samples: len(counts), OK: true}
}

func (d *spikeDetector) weigh(o Observation, ep *Episode) judgement {
	r, s, e := d.r, d.r.Spike, o.Expected
	c := float64(o.Count)
	if ep != nil && !ep.Down && c < float64(s.MinCount)*(1-r.Rearm.Hysteresis) {
		// Back whatever the normal: below min_count nothing is a spike.
		return judgement{known: true, level: float64(s.MinCount)}
	}
	if !e.OK {
		return judgement{}
	}
	up := judgement{down: false, known: true, level: max(s.Factor*e.Value, float64(s.MinCount))}
	up.severity = c / up.level
	up.fires = o.Count >= s.MinCount && c >= s.Factor*e.Value
	dn := judgement{down: true, known: true, level: e.Value / s.Factor}
	dn.severity = dn.level / max(c, 1)
	// A page whose normal is below min_count (zero included) never goes
	// quiet: 3 views falling to none is noise.
	dn.fires = e.Value >= float64(s.MinCount) && e.Value > 0 && c <= e.Value/s.Factor
	if z := s.Baseline.ZScore; z != nil {
		up.fires = up.fires && (c-e.Value)/e.Scale >= z.K
		dn.fires = dn.fires && (e.Value-c)/e.Scale >= z.K
	}
	if o.Late {
		// A low count in data not all there is no drop: held, neither
		// fired nor resolved, until the site's data is on time.
		dn = judgement{}
	}
	switch {
	case ep != nil:
		if ep.Down {
			return dn
		}
		return up
	case s.Direction == Down:
		return dn
	case s.Direction == Both && dn.fires:
		return dn
	}
	return up
}

// back: an episode up is back below its level × (1 − hysteresis) (or
// below min_count × it); one down once the count is within factor × (1 −
// hysteresis) of normal again.
func (d *spikeDetector) back(j judgement, o Observation, ep *Episode) bool {
	h := 1 - d.r.Rearm.Hysteresis
	if ep.Down {
		return float64(o.Count)*d.r.Spike.Factor*h >= o.Expected.Value
	}
	if float64(o.Count) < float64(d.r.Spike.MinCount)*h {
		return true
	}
	return float64(o.Count) < j.level*h
}

// HoldsLateDrops: when it looks down, as unusual rules do.
func (d *spikeDetector) HoldsLateDrops() bool { return d.LooksDown() }

// Settled: unsure (its quiet level already leaves out what cannot matter).
func (d *spikeDetector) Settled(Observation) bool { return false }

// SettleKey: none, it never settles.
func (d *spikeDetector) SettleKey() string { return "" }

// Against: the median of the baseline windows and the rule's factor.
func (d *spikeDetector) Against(o Observation, f Firing) Against {
	return Against{Baseline: o.Expected.Value, Factor: d.r.Spike.Factor, Direction: direction(f.Episode)}
}
