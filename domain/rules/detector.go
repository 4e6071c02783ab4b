package rules

import "time"

// Detector is what a rule's kind decides, and the only place that does:
// which past windows make a page's normal, what the normal and its usual
// range are, whether a count fires, is back, or is too small to matter.
// The sweep, the backtest, the console and the messages ask the rule's
// detector and switch on nothing; a message, rendered from a crossing's
// kept why rather than its rule, asks the why what it was measured
// against (crossing.Why.AgainstNormal). Each kind is one file implementing it
// (threshold.go, spike.go, newpage.go, unusual.go); Validate compiles the
// rule's detector once.
type Detector interface {
	Kind() Kind
	// Spans lists the past windows whose counts make a page's normal for
	// the rule's window ending at end. Windows starting before dataStart
	// are left out: before a site's data began its views are unknown, not
	// zero. Nil: the kind has no normal (threshold).
	Spans(end, dataStart time.Time) []Interval
	// Expect makes the normal from spans' counts (counts[i] is spans[i]'s,
	// in Spans' order with the unknown ones left out), and the page's
	// trend (PageTrend), which a kind whose normal follows none ignores.
	Expect(spans []Interval, counts []uint64, tr Trend) Expected
	// Reach is what a count query reads besides the window: Short, a
	// window ending with it for bursts (Observation.Short), Long, one
	// for drops (Observation.Long). Zero: none.
	Reach() Reach
	// QuietBelow is the count below which a page is, for the rule, the
	// same as a page without views: it neither fires nor holds an
	// episode open. 0: every count matters (a rule looking down).
	QuietBelow() uint64
	// LooksDown reports whether the rule hears pages going quiet, which
	// must then be judged as their hours pass even with no views.
	LooksDown() bool
	// HoldsLateDrops reports whether the rule judges no drop while a
	// site's data is late (Observation.Late), and so tells its receivers
	// when a site's data stops and starts again.
	HoldsLateDrops() bool
	// Settled reports whether a page with no state of its own (no
	// episode, nothing building, nothing remembered) is left as it is by
	// o: the sweep need not judge it. False when unsure.
	Settled(o Observation) bool
	// SettleKey names what Settled depends on besides the observation:
	// the rules of a file that watch one page with the same settings (one
	// per site, say) settle its count alike, so a sweep asks once per
	// page for all of them. "" when Settled is always false.
	SettleKey() string
	// Against is what a firing was measured against, for its why.
	Against(o Observation, f Firing) Against

	weigh(o Observation, ep *Episode) judgement
	back(j judgement, o Observation, ep *Episode) bool
}

// Against is what a firing was measured against: the normal (a
// threshold rule's: the level crossed), the usual range and the history
// it came from, the rule's factor, the burst window, and the direction
// ("up", "down"; empty for kinds that look only up and say nothing of it).
type Against struct {
	Baseline, Low, High, Factor float64
	Days                        int
	Weekly                      bool
	Trend                       float64 // Expected.Trend
	Burst                       time.Duration
	Direction                   string
	// Short is the burst's own count, normal and usual range (Burst
	// set): the normal scaled to its minutes. A burst that fired may sit
	// inside the hour's range ("28 views in 1h, expected 1–29"); what
	// it was judged on is its minutes ("20 in 10 minutes, expected 0–3").
	Short                              uint64
	ShortBaseline, ShortLow, ShortHigh float64
	// Lasted and BurstsLast are Firing's: a surge heard because it
	// lasted longer than the page's bursts, under their count.
	Lasted, BurstsLast time.Duration
	// NewNormal is Firing's: a resolve whose page had not come back.
	NewNormal bool
	// Launch and LaunchPassed are Firing's: a new page's launch, past
	// all but one of its site's.
	Launch       bool
	LaunchPassed uint64
	LaunchRank   int
	// Bursts and BurstsPassed are Firing's: a page whose bursts are its
	// normal, past what they reach.
	Bursts       int
	BurstsPassed uint64
	// HoursBefore and HoursBeforeRatio are Firing's: a surge heard against the
	// hours before its window.
	HoursBefore      uint64
	HoursBeforeRatio float64
	HoursBeforeSpan  time.Duration // how long those hours are
}

// direction is "down" for an episode of a page gone quiet, else "up".
func direction(ep Episode) string {
	if ep.Down {
		return "down"
	}
	return "up"
}

// HasNormal reports whether the rule judges pages against a normal read
// from their history (every kind but threshold).
func (r *Rule) HasNormal() bool { return r.Kind() != KindThreshold }

// Judge steps a page's state through one observation: the threshold
// state machine, or the episode's (StepEpisode) for kinds with a normal.
func (r *Rule) Judge(prev State, o Observation) (State, []Firing) {
	if !r.HasNormal() {
		return r.Step(prev, o.Count, o.At)
	}
	return r.StepEpisode(prev, o)
}

// Reach is the extra windows a detector's count query reads, each ending
// with the rule's: Short, a burst's minutes (Observation.Short); Long, a
// drop's hours (Observation.Long). Zero: none.
type Reach struct {
	Short, Long time.Duration
}

// Detector is the rule's detector, compiled by Validate (built afresh,
// unstored, on a rule that was not validated, as in tests).
func (r *Rule) Detector() Detector {
	if r.det != nil {
		return r.det
	}
	return r.newDetector()
}

func (r *Rule) newDetector() Detector {
	switch {
	case r.Spike != nil:
		return &spikeDetector{r: r}
	case r.NewPage != nil:
		return &newPageDetector{r: r}
	case r.Unusual != nil:
		return &unusualDetector{r: r, u: r.Unusual}
	}
	return &thresholdDetector{r: r}
}

// Kind reports the rule's kind.
func (r *Rule) Kind() Kind { return r.Detector().Kind() }

// BaselineSpans lists the windows whose counts make a page's normal for
// the rule's window ending at end (Detector.Spans).
func (r *Rule) BaselineSpans(end, dataStart time.Time) []Interval {
	return r.Detector().Spans(end, dataStart)
}

// ZoneAuto is the zone of an unusual rule that reads each site's normal
// on the clocks its readers keep, learned from its traffic (package
// clocks) rather than named.
const ZoneAuto = "auto"

// ClocksReach is how far back a change of a site's clocks can still move
// the normals of rules that learn them: their longest weekly profile,
// and its days (0: none learns them). A change further back moves no
// span of theirs, whichever clocks are learned from it.
func ClocksReach(rs []*Rule) time.Duration {
	var reach time.Duration
	for _, r := range rs {
		if LearnsClocks(r) {
			reach = max(reach, time.Duration(r.Unusual.Weeks+1)*7*24*time.Hour)
		}
	}
	return reach
}

// LearnsClocks reports whether r reads each site's normal on its learned
// clocks (zone: auto), and so wants them for SpansOn.
func LearnsClocks(r *Rule) bool { return r.Unusual != nil && r.Zone == ZoneAuto }

// SpansOn is BaselineSpans for a site whose readers keep clock (nil: not
// known, UTC's): a rule that learns clocks reads its normal on them, any
// other on its own zone.
func SpansOn(r *Rule, end, dataStart time.Time, clock *time.Location) []Interval {
	d, ok := r.Detector().(*unusualDetector)
	if !ok || !LearnsClocks(r) || clock == nil {
		return r.BaselineSpans(end, dataStart)
	}
	return unusualSpans(d, end, dataStart, clock)
}

// Normal makes the page's normal from the counts of BaselineSpans'
// windows (Detector.Expect), carried forward by the page's trend where
// the rule follows one (FollowsTrend; else tr is not read).
func (r *Rule) Normal(spans []Interval, counts []uint64, tr Trend) Expected {
	if !FollowsTrend(r) {
		tr = Trend{}
	}
	return r.Detector().Expect(spans, counts, tr)
}

// Expect makes the normal from counts alone, for kinds whose normal does
// not depend on which window each count is of (spike, new_page).
func (r *Rule) Expect(counts []uint64) Expected { return r.Detector().Expect(nil, counts, Trend{}) }
