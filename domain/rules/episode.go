package rules

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"
)

// Observation is what a sweep knows of one page for one rule at one time:
// the count over the window, and the page's normal (spike and new_page
// rules; zero for threshold rules).
type Observation struct {
	At time.Time
	// End is when the window ends: in a sweep the minute after At's (a
	// sweep at 10:00:00 judges the window ending at 10:01); zero: At.
	End      time.Time
	Count    uint64
	Expected Expected
	// Short is the count over the detector's short window ending with
	// the rule's (Reach.Short: bursts); zero when it reads none.
	Short uint64
	// Long is the count over the detector's long window ending with the
	// rule's (Reach.Long: a drop's hours), and LongLate whether the
	// site's data was late at any time in it (a hole in its data is no
	// drop); zero and false when it reads none.
	Long     uint64
	LongLate bool
	// Bursts are the page's recent surges, and Above when the run of
	// them that this observation would continue began (zero: none), from
	// its state (StepEpisode fills them in).
	Bursts []Burst
	Above  time.Time
	// Launches are the launches of the page's site under the rule, and
	// Page the page's name among them (Launch.Page): a page in its
	// launch is judged against the others' in place of its own bursts
	// (unusual rules). Launching, and which of them a launch must pass
	// (LaunchRank), are set when it is (StepEpisode).
	Launches   Launches
	Page       string
	Launching  bool
	LaunchRank int
	// Before is the page's views over the weeks before the window (from
	// the UTC midnight before its normal's first window: every day the
	// normal reads, and the hours between), when BeforeOK: the sweeper
	// reads it for rules that judge launches (ReadsLaunches). A page
	// with none, or a stray view or two, is new.
	Before   uint64
	BeforeOK bool
	// SettledLow is when the page's last drop that resolved at a new
	// normal began (State.SettledLow), from its state; zero: none.
	SettledLow time.Time
	// Clock is the clock a rule that learns its sites' clocks read the
	// normal on ("America/New_York"; "": UTC's, none learned yet).
	Clock string
	// Late is set when the site's data is behind, or was at some time
	// in the window: a low count may be hits not loaded yet, or a hole
	// whose hits never came, so detectors looking down judge no drop on
	// it.
	Late bool
	// levelTop is the top of the normal at the page's level when it is
	// judged against its old one (raisedNormal; 0: it is not): a surge's
	// size (Episode.Ratio) is told against the level it is at, which its
	// later hours are judged at.
	levelTop float64
}

// Episode is the open episode of an episodic rule, kept in State.
type Episode struct {
	// Since is when it fired.
	Since time.Time `json:"since"`
	// Peak is the highest count seen in it, at PeakAt.
	Peak   uint64    `json:"peak"`
	PeakAt time.Time `json:"peak_at"`
	// Ratio is the highest count seen in it over the top of its normal,
	// at hours of min_count or more (up; 0: none known): how big a surge
	// it is, which an hour whose range is wider cannot tell from back
	// (unusual rules).
	Ratio float64 `json:"ratio,omitempty"`
	// Depth is the lowest count seen in a drop over the bottom of its
	// normal, at hours of min_count or more (0: none known): how deep a
	// drop it is, which an hour whose range is wider cannot tell from
	// back (unusual rules).
	Depth float64 `json:"depth,omitempty"`
	// Days are its count over its normal once an hour, a day at a time
	// (unusual rules): a surge as high two days running is a new level
	// (unusual_level.go).
	Days
	// RunDays is how many days running, to the latest, its days' levels
	// have stayed within steadyBand of each other, RunLow to RunHigh: a
	// drop is a lower level only after lowerDays of them.
	RunDays int     `json:"run_days,omitempty"`
	RunLow  float64 `json:"run_low,omitempty"`
	RunHigh float64 `json:"run_high,omitempty"`
	// Young is the level a surge held two days running on a page under
	// 3 weeks of history, where no level is set yet (stepLevel): kept
	// silently when its normal follows it (unusual_level.go).
	Young float64 `json:"young,omitempty"`
	// Steps is how many escalate steps were reached (and claimed).
	Steps int `json:"steps,omitempty"`
	// FiredLevel is the level it fired at: its count then, the rate its
	// burst window's count says over the whole window, or the level it
	// had to pass (judgement.level), the most of these; FiredShortLevel
	// the same of its burst window (0: none). Escalate's steps are
	// multiples of these as well as of the level its later hours are
	// judged at (sinceFired). 0 in an episode opened before they were
	// kept: the later level alone is used.
	FiredLevel      float64 `json:"fired_level,omitempty"`
	FiredShortLevel float64 `json:"fired_short_level,omitempty"`
	// Down is set for an episode of a page that went quiet. Began is
	// when it began (a window before it fired, and down_for before that
	// for a drop; or with one the same way that ended less than
	// episodeBreak before it: State.PrevBegan; unusual rules).
	Down  bool      `json:"down,omitempty"`
	Began time.Time `json:"began,omitzero"`
	// Long: a drop heard on its hours together (Reach.Long), whose hours
	// must be no drop again, as well as its hour in range, for it to be
	// back: a small page's evening range reaches down to the drop.
	Long bool `json:"long,omitempty"`
	// Back is when the count came back to the re-arm level and stayed;
	// the episode resolves rearm.settle after it. Zero: not back.
	Back time.Time `json:"back,omitzero"`
	// SmallSince is when the page's normal fell too small to tell
	// whether a drop goes on (unusual rules: under min_count, a page's
	// night); zero: it is not. The drop is held from then, for a while.
	SmallSince time.Time `json:"small_since,omitzero"`
	// Past is when the page was first seen past its range again, at an
	// hour that can tell, with no look since finding it back or unable
	// to tell, while a hold (SmallSince) is on; zero: it was not. Only
	// a page past it for rearm.settle at a stretch ends a hold, as only
	// one back for settle ends the episode.
	Past time.Time `json:"past,omitzero"`
	// Under is when a surge's page was first seen at or under the level a
	// drop is heard at, and has been since (zero: it is not): a surge
	// followed by an outage (a site swamped, then down). Its drop's
	// down_for runs from then, not from the surge's resolve an hour or
	// more later (State.Building).
	Under time.Time `json:"under,omitzero"`
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
	// sustain, when set with pending, is how long the condition must
	// hold before it fires: a page below its range for an hour of a
	// quiet afternoon is not yet a page gone quiet.
	pending bool
	sustain time.Duration
	// lingers: not pending, but still outside the usual range on the
	// pending side, so a condition that began to build goes on building:
	// a drop hovering at its level is one drop lasting, not a clock
	// started again each time a sweep finds it a few views above.
	lingers bool
	// burst: a surge past the normal, to remember (State.Bursts) whether
	// or not it fires.
	burst bool
	// short: the severity is the burst window's (Reach.Short), not the
	// rule's window. shortLevel is that window's level (0: not judged).
	short      bool
	shortLevel float64
	// under: an open surge's page is at or under the level a drop is
	// heard at (Episode.Under).
	under bool
	// long: the severity is the drop's long window's (Reach.Long): its
	// hours together fell, where each alone says too little.
	long bool
	// small: the normal is too small to tell a drop from a page back
	// (Episode.SmallSince).
	small bool
	// moved: an open episode's page is inside a usual range that
	// followed it, not back where it was (Firing.NewNormal); began:
	// when its drop began (State.SettledLow); followed: its range is
	// read mostly from days since it began, the page over its middle
	// (moved) or not.
	moved, followed bool
	began           time.Time
	// ratio: an open surge's count over the top of its normal, at an
	// hour big enough to say (Episode.Ratio); 0: none.
	ratio float64
	// depth: an open drop's count over the bottom of its normal, at an
	// hour whose normal is min_count or more (0: none).
	depth float64
	// lasted, when set, is how long the page's run of surges had lasted
	// when it outlasted its bursts (whose runs last burstsLast) and was
	// judged at its normal's level, under their count.
	lasted, burstsLast time.Duration
	// before, when set, is the views of the hours before the window
	// that a surge was heard against (weighRecent), and beforeRatio
	// what the window usually is of them.
	before      uint64
	beforeRatio float64
	// bursts, when set, is how many remembered bursts of a page whose
	// bursts are its normal level was read from (burstBound).
	bursts int
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
	var ended *Firing
	var judged *Expected // the normal as a new level made it (unusual_level.go); nil: as read
	var atLevel bool     // ... at that level
	var held *Raised     // ... that level
	defer func() {
		for i := range fire {
			if fire[i].Normal == nil && judged != nil && !fire[i].LevelEnded && fire[i].Raised == 0 {
				fire[i].Normal = judged // what its why says it was measured against
				if atLevel {
					fire[i].Raised, fire[i].RaisedSince = held.Ratio(), held.Since()
				}
			}
		}
		if ended != nil {
			fire = append(r.firings(next, *ended), fire...)
		}
		if len(fire) > 0 || !sameEpisode(prev.Open, next.Open) || !sameRaised(prev.Raised, next.Raised) {
			next.Seen = o.At
		}
	}()
	next = prev
	if prev.Open != nil {
		ep := *prev.Open
		next.Open = &ep
	}
	ep := next.Open
	det := r.Detector()
	o.Bursts = prev.Bursts
	if o.At.Sub(prev.SettledLow) > settledMemory {
		next.SettledLow = time.Time{}
	}
	o.SettledLow = next.SettledLow
	o.Expected, judged, atLevel, ended, o.levelTop = raisedNormal(r, &next, o)
	held = next.Raised
	if ended != nil && ep != nil && ep.Down == (ended.Raised > 1) {
		// Its drop from a raised level (its surge from a lower one) was
		// its return: the level's end tells it.
		next.Open, next.Fired, ep = nil, nil, nil
	}
	o.Above = aboveFrom(r, prev, o.At)
	var launch, first bool
	if ReadsLaunches(r) {
		launch, first = launching(prev, o)
	}
	if launch {
		o.Bursts, o.LaunchRank = o.Launches.For(o.Page)
		o.Launching = true
	}
	if ep == nil {
		j := det.weigh(o, nil)
		next.stepRun(o, j, o.Count < det.QuietBelow())
		if n := len(next.Bursts); launch && first && n > 0 && next.Bursts[n-1].At.Equal(o.At) {
			next.Bursts[n-1].Launch = true // its first burst: the page's launch
		}
		if !j.known {
			return next, nil // the normal is unknown: hold what was building
		}
		if j.pending {
			// A condition that must last: it fires once it has held
			// for j.sustain, from the first observation it held at.
			if next.Building.IsZero() {
				next.Building = o.At
			}
			j.fires = o.At.Sub(next.Building) >= j.sustain
		} else if !j.lingers {
			next.Building = time.Time{}
		}
		if !j.fires {
			return next, nil
		}
		next.Building = time.Time{}
		next.Episode++
		next.LastFired = o.At
		next.Open = &Episode{Since: o.At, Peak: o.Count, PeakAt: o.At, Down: j.down, Long: j.long}
		if r.Kind() != KindThreshold {
			// A threshold's steps are multiples of the threshold, as
			// its message says ("rose to 2× its threshold").
			next.Open.FiredLevel = max(j.level, float64(o.Count))
		}
		if sh := det.Reach().Short; j.shortLevel > 0 && sh > 0 {
			// Heard on its first minutes, the window not yet full: the
			// level it fired at is the rate they say, or a sudden surge
			// is told "rose to 4×" as its window fills.
			next.Open.FiredShortLevel = max(j.shortLevel, float64(o.Short))
			next.Open.FiredLevel = max(next.Open.FiredLevel, float64(o.Short)*float64(r.Window.Rolling)/float64(sh))
		}
		if r.Unusual != nil {
			next.Open.Began = episodeBegan(r, next, o.At, j.down)
		}
		if r.Kind() == KindThreshold {
			next.Fired = []uint64{r.Thresholds[0]}
		}
		f := Firing{Event: EventFire, Level: j.level, Severity: j.severity, Short: shortOf(det, j), Lasted: j.lasted, BurstsLast: j.burstsLast,
			HoursBefore: j.before, HoursBeforeRatio: j.beforeRatio}
		if j.bursts > 0 {
			f.Bursts, f.BurstsPassed = j.bursts, uint64(math.Ceil(j.level))
		}
		if o.Launching {
			f.Launch = true
			if j.lasted == 0 { // else heard by outlasting them, under their count
				f.LaunchRank = burstRank(o)
				f.LaunchPassed = nthHighest(o.Bursts, o.At.Add(-pastSpan), time.Time{}, f.LaunchRank)
			}
		}
		return next, r.firings(next, f)
	}
	j := det.weigh(o, ep)
	back := j.known && det.back(j, o, ep) // none of it reads what is stepped below
	switch {
	case j.small && !j.known:
		// Held. What was seen of the page back before a held look does
		// not count towards its settle: after it, back must be seen
		// settle long at a stretch again.
		if ep.SmallSince.IsZero() {
			ep.SmallSince = o.At
		}
		ep.Back = time.Time{}
	case !j.small && j.known && !o.Late && !o.LongLate && !ep.SmallSince.IsZero() && !back:
		// Past its range at an hour that can tell (with all its data):
		// for settle at a stretch, the surge (or drop) is on and its
		// hold ends. A look or two past it is a noisy page's: a page
		// whose range is wide at most hours, a little past it at the odd
		// hour that can tell and never back there for settle, held one
		// surge open 17.7 days, each such look beginning its hold again.
		if ep.Past.IsZero() {
			ep.Past = o.At
		}
		if o.At.Sub(ep.Past) >= r.Rearm.Settle {
			ep.SmallSince = time.Time{}
		}
	}
	if !ep.Past.IsZero() && (j.small || ep.SmallSince.IsZero() || back) {
		ep.Past = time.Time{}
	}
	if !j.known {
		if j.small {
			sampleLevel(r, ep, o) // held: its hour still tells its level
		}
		return next, nil
	}
	if (!ep.Down && o.Count > ep.Peak) || (ep.Down && o.Count < ep.Peak) {
		ep.Peak, ep.PeakAt = o.Count, o.At
	}
	ep.Ratio = max(ep.Ratio, j.ratio)
	if j.depth > 0 && (ep.Depth == 0 || j.depth < ep.Depth) {
		ep.Depth = j.depth
	}
	// Every sweep of a run, not only its peaks: how long it lasted is
	// remembered too.
	next.stepRun(o, j, false)
	// The level the page is at, a multiple of its normal before it:
	// judged at it, or past it once its normal has followed it.
	level := 0.0
	if held != nil && !held.Ended {
		level = held.Ratio()
	}
	if k := stepLevel(r, ep, o, level); k > 0 && !back {
		// As high (or as low) two days running (a week, down): a new
		// level, not a surge (unusual_level.go). It resolves, and the
		// page is judged at that level from now; or, on a page at a
		// level, back at its old, where the level ends.
		since := cmp.Or(ep.Began, episodeBegan(r, next, ep.Since, ep.Down))
		next.Open, next.Fired = nil, nil
		if backAtOld(k*level, level) {
			return next, r.firings(next, *endLevel(&next, held, since, o.At))
		}
		if atLevel {
			k *= level // measured against the level's normal
		}
		next.Raised = raise(next.Raised, since, o.At, k, judged != nil, o.Expected, next.Episode)
		return next, r.firings(next, Firing{Event: EventResolve, Level: j.level, Severity: j.severity, Episode: *ep, NewNormal: true,
			Raised: next.Raised.Ratio(), RaisedSince: next.Raised.Since()})
	}
	switch {
	case !j.under:
		ep.Under = time.Time{}
	case ep.Under.IsZero():
		ep.Under = o.At
	}
	if back {
		if ep.Back.IsZero() {
			ep.Back = o.At
		}
		if o.At.Sub(ep.Back) >= r.Rearm.Settle {
			next.Open = nil
			next.Fired = nil
			if j.moved && ep.Down {
				next.SettledLow = j.began
			}
			// Kept as a guess (Raised.Young) also where the page is
			// under its middle at the hour its episode resolves: a page
			// risen on a Sunday, told on the Monday and back in range on
			// a Friday morning, kept no level and was told taking off
			// again a week after its normal read past weeks.
			if j.followed && ep.Young > 0 && held == nil {
				next.Raised = raise(nil, cmp.Or(ep.Began, episodeBegan(r, next, ep.Since, ep.Down)), o.At, ep.Young, false, o.Expected, next.Episode)
				next.Raised.Young = true
			}
			if !ep.Began.IsZero() {
				next.PrevBegan, next.PrevEnded, next.PrevDown = ep.Began, o.At, ep.Down
			}
			if !ep.Under.IsZero() {
				next.Building = ep.Under // its drop has lasted since
			}
			return next, r.firings(next, Firing{Event: EventResolve, Level: j.level, Severity: j.severity, Episode: *ep, NewNormal: j.moved})
		}
		return next, nil
	}
	ep.Back = time.Time{}
	j = sinceFired(ep, o, j)
	step := ep.Steps
	for step < len(r.Escalate) && j.severity >= r.Escalate[step] {
		step++
	}
	if step == ep.Steps {
		return next, nil
	}
	ep.Steps = step
	return next, r.firings(next, Firing{Event: EventEscalate, Level: j.level, Severity: j.severity, Step: r.Escalate[step-1], Short: shortOf(det, j), Lasted: j.lasted, BurstsLast: j.burstsLast})
}

// sinceFired is j with its severity also measured against the level
// the open surge fired at (Episode.FiredLevel), the lesser of the two:
// escalate says "rose to 4× the level it fired at", and it must have
// risen both ways. The level its later hours are judged at moves with
// the hour: against it alone, a page whose count held at 186 for the
// three minutes across 8:00 was told "rose to 4×" at 8:00, its next
// hour's normal lower; and a sudden surge, heard on its first minutes
// far past the level it had to pass, was told "rose to 4×" one row
// later, at 1.6 × the count it fired at. Against the level it fired at
// alone, a surge fired at night and going on at the same multiple of
// its day's normal would be told rising each morning. A drop, or an
// episode opened before the levels were kept, keeps the level it is
// judged at.
func sinceFired(ep *Episode, o Observation, j judgement) judgement {
	if ep.Down || ep.FiredLevel <= 0 || j.level <= 0 {
		return j
	}
	c := float64(o.Count)
	hour := min(c/j.level, c/ep.FiredLevel)
	short := 0.0
	if j.shortLevel > 0 && ep.FiredShortLevel > 0 {
		short = min(float64(o.Short)/j.shortLevel, float64(o.Short)/ep.FiredShortLevel)
	}
	j.severity, j.short = max(hour, short), short > hour
	return j
}

// stepRun follows the page's run of surges: a surge extends it (or
// begins one) and is remembered with how long its run has lasted; a
// count judged and found no surge ends it, and so does one too quiet to
// be judged (its normal unread: a rule looking up only reads none under
// Detector.QuietBelow). An observation no later than the run's last is
// one replayed (a sweeper catching up): it changes nothing.
func (s *State) stepRun(o Observation, j judgement, quiet bool) {
	if !s.AboveTo.IsZero() && !o.At.After(s.AboveTo) {
		return
	}
	switch {
	case j.burst:
		s.AboveFrom, s.AboveTo = o.Above, o.At
		if s.AboveFrom.IsZero() {
			s.AboveFrom = o.At
		}
		s.Bursts = rememberBurst(s.Bursts, o.At, s.AboveFrom, o.Count)
	case j.known || quiet:
		s.AboveFrom, s.AboveTo = time.Time{}, time.Time{}
	}
}

func sameRaised(a, b *Raised) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Trend == b.Trend && a.Noise == b.Noise && a.Episode == b.Episode && a.Ended == b.Ended && a.Young == b.Young && a.Seen == b.Seen && a.Back.Equal(b.Back) && a.same(b.Days) && slices.Equal(a.Steps, b.Steps)
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
		if f.LevelEnded {
			// Keyed by the episode that raised it: a later one may be
			// open, and raise a level of its own.
			f.Key = strconv.FormatUint(f.levelEpisode, 10) + ".level.resolved"
		}
	}
	if s.Open != nil && !f.LevelEnded {
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

// shortOf is the other window a judgement's severity is of (a burst's
// minutes, a drop's hours), 0: the rule's.
func shortOf(d Detector, j judgement) time.Duration {
	switch {
	case j.long:
		return d.Reach().Long
	case j.short:
		return d.Reach().Short
	}
	return 0
}
