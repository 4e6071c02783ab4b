package rules

import (
	"math"
	"strconv"
	"time"
)

// Observation is what a sweep knows of one page for one rule at one time:
// the count over the window, and the page's normal (spike and new_page
// rules; zero for threshold rules).
type Observation struct {
	At       time.Time
	Count    uint64
	Expected Expected
}

// Episode is the open episode of an episodic rule, kept in State.
type Episode struct {
	// Since is when it fired.
	Since time.Time `json:"since"`
	// Peak is the highest count seen in it, at PeakAt.
	Peak   uint64    `json:"peak"`
	PeakAt time.Time `json:"peak_at"`
	// Steps is how many escalate steps were reached (and claimed).
	Steps int `json:"steps,omitempty"`
	// Down is set for an episode of a page that went quiet.
	Down bool `json:"down,omitempty"`
	// Back is when the count came back to the re-arm level and stayed;
	// the episode resolves rearm.settle after it. Zero: not back.
	Back time.Time `json:"back,omitzero"`
	// Site and Path name the page, set by the sweeper: once its count
	// drops to nothing no query returns it, and its resolve still needs
	// a name.
	Site string `json:"site,omitempty"`
	Path string `json:"path,omitempty"`
}

// judgement is one observation weighed for a rule.
type judgement struct {
	fires    bool    // starts an episode now
	down     bool    // ... of a page gone quiet
	level    float64 // the count it is measured against: threshold, factor × baseline, min_count
	severity float64 // how many times past level (down: how many times below)
	known    bool    // the normal was known: back and escalate can be judged
}

// weigh judges an observation in the direction given (for an open
// episode: the episode's), or in every direction the rule looks.
func (r *Rule) weigh(o Observation, open bool, down bool) judgement {
	c := float64(o.Count)
	switch r.Kind() {
	case KindThreshold:
		t := float64(r.Thresholds[0])
		return judgement{fires: Crossed(o.Count, r.Thresholds[0]), level: t, severity: c / t, known: true}
	case KindNewPage:
		min := float64(r.NewPage.MinCount)
		// Once open the page has a past, so only min_count matters.
		fires := o.Expected.OK && o.Expected.Value == 0 && o.Count >= r.NewPage.MinCount
		return judgement{fires: fires, level: min, severity: c / min, known: true}
	}
	s := r.Spike
	e := o.Expected
	if open && !down && c < float64(s.MinCount)*(1-r.Rearm.Hysteresis) {
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
	switch {
	case open:
		if down {
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

// back reports whether an open episode's count is back at the re-arm
// level: the level × (1 − hysteresis), measured the episode's way.
func (r *Rule) back(j judgement, o Observation, ep *Episode) bool {
	h := 1 - r.Rearm.Hysteresis
	if r.Kind() == KindThreshold {
		return o.Count <= r.RearmLevel(r.Thresholds[0])
	}
	if ep.Down {
		// Back once the count is within factor × (1 − h) of normal again.
		return float64(o.Count)*r.Spike.Factor*h >= o.Expected.Value
	}
	if r.Kind() == KindSpike && float64(o.Count) < float64(r.Spike.MinCount)*h {
		return true
	}
	return float64(o.Count) < j.level*h
}

// StepEpisode is the state machine of episodic rules (spike, new_page,
// and threshold rules with escalate or resolve): one message when an
// episode fires, one at each escalate step it reaches (the highest new
// one, when a sweep passes several), and one when it resolves, rearm.settle
// after the count came back to the re-arm level and stayed there. Which
// of these are sent is notify_on's choice; the state moves the same. A
// page whose normal is unknown holds its state. Keys: the episode number
// for fire, "<episode>.x<step>" for escalate, "<episode>.resolved".
func (r *Rule) StepEpisode(prev State, o Observation) (next State, fire []Firing) {
	if !prev.Seen.IsZero() && !o.At.After(prev.Seen) {
		return prev, nil
	}
	defer func() {
		if len(fire) > 0 || !sameEpisode(prev.Open, next.Open) {
			next.Seen = o.At
		}
	}()
	next = prev
	if prev.Open != nil {
		ep := *prev.Open
		next.Open = &ep
	}
	ep := next.Open
	if ep == nil {
		j := r.weigh(o, false, false)
		if !j.fires {
			return next, nil
		}
		next.Episode++
		next.LastFired = o.At
		next.Open = &Episode{Since: o.At, Peak: o.Count, PeakAt: o.At, Down: j.down}
		if r.Kind() == KindThreshold {
			next.Fired = []uint64{r.Thresholds[0]}
		}
		return next, r.firings(next, Firing{Event: EventFire, Level: j.level, Severity: j.severity})
	}
	j := r.weigh(o, true, ep.Down)
	if !j.known {
		return next, nil
	}
	if (!ep.Down && o.Count > ep.Peak) || (ep.Down && o.Count < ep.Peak) {
		ep.Peak, ep.PeakAt = o.Count, o.At
	}
	if r.back(j, o, ep) {
		if ep.Back.IsZero() {
			ep.Back = o.At
		}
		if o.At.Sub(ep.Back) >= r.Rearm.Settle {
			next.Open = nil
			next.Fired = nil
			return next, r.firings(next, Firing{Event: EventResolve, Level: j.level, Severity: j.severity, Episode: *ep})
		}
		return next, nil
	}
	ep.Back = time.Time{}
	step := ep.Steps
	for step < len(r.Escalate) && j.severity >= r.Escalate[step] {
		step++
	}
	if step == ep.Steps {
		return next, nil
	}
	ep.Steps = step
	return next, r.firings(next, Firing{Event: EventEscalate, Level: j.level, Severity: j.severity, Step: r.Escalate[step-1]})
}

func sameEpisode(a, b *Episode) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// firings names f within its episode and returns it if the rule sends
// that kind of message. The state moves whether or not it is sent, so
// each step is claimed once either way.
func (r *Rule) firings(s State, f Firing) []Firing {
	ep := strconv.FormatUint(s.Episode, 10)
	switch f.Event {
	case EventFire:
		f.Key = ep
	case EventEscalate:
		f.Key = ep + ".x" + strconv.FormatFloat(f.Step, 'f', -1, 64)
	case EventResolve:
		f.Key = ep + ".resolved"
	}
	if s.Open != nil {
		f.Episode = *s.Open
	}
	if len(r.Thresholds) > 0 {
		f.Threshold = r.Thresholds[0]
	} else {
		f.Threshold = uint64(math.Ceil(f.Level))
	}
	if !r.Notifies(f.Event) {
		return nil
	}
	return []Firing{f}
}
