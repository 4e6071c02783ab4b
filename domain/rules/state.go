package rules

import (
	"math"
	"slices"
	"strconv"
	"time"
)

// State is what the sweeper keeps between sweeps for one rule and one page
// (or, for a sum rule, for the rule). The zero value is a rule that never
// fired: everything armed. It is JSON-friendly for the KV store.
type State struct {
	// Fired holds the thresholds that fired and have not re-armed: for
	// calendar windows, those fired in the window named by Window.
	Fired []uint64 `json:"fired,omitempty"`
	// Window is the calendar window key Fired belongs to.
	Window string `json:"window,omitempty"`
	// LastFired is when a threshold last fired; cooldowns count from it.
	LastFired time.Time `json:"last_fired,omitzero"`
	// Episode counts the sweeps in which the rule fired. It numbers the
	// crossings of rolling rules, which have no window to name them.
	Episode uint64 `json:"episode,omitempty"`
	// Open is the episode in progress of an episodic rule (spike,
	// new_page, or a threshold rule with escalate or resolve); nil: none.
	Open *Episode `json:"open,omitempty"`
	// Seen is when an episodic rule's state last changed. Observations
	// at or before it are not stepped again: a sweeper catching up from
	// an older progress than the state's must not replay what another
	// sweeper already judged (and fire a second episode over it).
	Seen time.Time `json:"seen,omitzero"`
	// Building is when a condition that must last before it fires (a
	// page far below its range, for unusual rules) was first seen; zero:
	// none is building.
	Building time.Time `json:"building,omitzero"`
	// Bursts are the page's recent surges, told or not (unusual rules):
	// a count it reached twice in 4 weeks is its normal.
	Bursts []Burst `json:"bursts,omitempty"`
	// AboveFrom and AboveTo are the page's latest run of surges
	// (unusual rules): the first and the last sweep that found it past
	// its normal, with none between finding it back. A run lasts while
	// its sweeps are less than a window apart: a page not read (too few
	// views to judge) is not above. How long a run lasts is weighed
	// against how long the page's bursts last.
	AboveFrom time.Time `json:"above_from,omitzero"`
	AboveTo   time.Time `json:"above_to,omitzero"`
	// SettledLow is when the page's last drop that resolved at a new
	// normal (unusual rules: it had not come back) began: a drop is not
	// judged again against a normal read mostly from before then.
	SettledLow time.Time `json:"settled_low,omitzero"`
	// PrevBegan and PrevEnded are when the page's last episode that came
	// back began and ended, PrevDown whether it was a drop (unusual
	// rules): one the same way again within episodeBreak of it began with
	// it, as a surge of hours on a page that fell breaks its drop, not
	// its fall (and a quiet night a rise, not the rise).
	PrevBegan time.Time `json:"prev_began,omitzero"`
	PrevEnded time.Time `json:"prev_ended,omitzero"`
	PrevDown  bool      `json:"prev_down,omitempty"`
	// Raised is the level a page that rose for good held (unusual
	// rules, unusual_level.go): its normal is read at that multiple
	// until it has followed the page; nil: none.
	Raised *Raised `json:"raised,omitempty"`
	// Site is the page's site, set by the sweeper on a state that
	// remembers a launch (Burst.Launch): a site's launches are read from
	// its pages' states, whose keys do not name the site.
	Site string `json:"site,omitempty"`
}

// Raised is a page's new level: the steps it rose by (Steps: each's
// level from its Since, a multiple of its normal at the first rise; the
// latest its level now), its normal then carried forward by a trend of
// Trend a week (Expected.Trend), the page's own noise then Noise
// (Expected.Noise; 0: not read), and the episode that raised it last
// (its end is keyed by it).
type Raised struct {
	Steps   []LevelStep `json:"steps"`
	Trend   float64     `json:"trend,omitempty"`
	Noise   float64     `json:"noise,omitempty"`
	Episode uint64      `json:"episode,omitempty"`
	// Back is when the page was first seen back at its old level, with
	// every look since that could tell finding it there; zero: it was
	// not.
	Back time.Time `json:"back,omitzero"`
	// Days are the page's count over its normal at the level once an
	// hour, a day at a time, with no episode open: two days running at
	// one level apart from it move the level there (followLevel).
	Days
	// Ended: the page came back to its old level (its last step, of
	// ratio 1), told; its normal is read down from the rise's weeks
	// until they leave it.
	Ended bool `json:"ended,omitempty"`
	// Young: set from a young page's first two days (Episode.Young);
	// Seen: the page was seen at it once its normal read past weeks
	// alone, where its ranges at the two levels do not meet. A young
	// level the page is back from before it was seen at was no level:
	// it is dropped, untold. One seen at ends on its days alone.
	Young bool `json:"young,omitempty"`
	Seen  bool `json:"seen,omitempty"`
}

// Days is a page's count over a normal once an hour, a day at a time:
// DayFrom is when the latest day began, Hours[:NHours] its hours so far
// (the latest at HourAt), LastDay the median of the day before's (0:
// none, or too few hours). An episode's tells whether it holds a level
// (stepLevel), a level's whether the page has moved from it
// (followLevel). Embedded, its fields keep their JSON names.
type Days struct {
	DayFrom time.Time   `json:"day_from,omitzero"`
	HourAt  time.Time   `json:"hour_at,omitzero"`
	Hours   [24]float32 `json:"hours,omitzero"`
	NHours  int         `json:"n_hours,omitempty"`
	LastDay float64     `json:"last_day,omitempty"`
}

// take notes v, a count over its normal, as the day's next hour, at most
// once an hour.
func (d *Days) take(at time.Time, v float64) {
	if d.NHours < len(d.Hours) && (d.HourAt.IsZero() || at.Sub(d.HourAt) >= time.Hour) {
		d.Hours[d.NHours] = float32(v)
		d.NHours++
		d.HourAt = at
	}
}

// level is the median of the day's hours so far, or 0 under 12 of them:
// a day with too few hours told says nothing of its level.
func (d *Days) level() float64 {
	if d.NHours < 12 {
		return 0
	}
	var xs [len(d.Hours)]float64
	for i, h := range d.Hours[:d.NHours] {
		xs[i] = float64(h)
	}
	return median(xs[:d.NHours])
}

// same reports whether d and e hold the same days.
func (d Days) same(e Days) bool {
	return d.DayFrom.Equal(e.DayFrom) && d.HourAt.Equal(e.HourAt) && d.NHours == e.NHours && d.LastDay == e.LastDay
}

// LevelStep is one rise of a page that rose for good: from Since (when
// the surge that held it began) at Ratio × its normal at the first rise,
// read so from Set (when it had held two days; zero in a state written
// before it was kept: Since).
type LevelStep struct {
	Since time.Time `json:"since"`
	Ratio float64   `json:"ratio"`
	Set   time.Time `json:"set,omitzero"`
}

// Since is when the page first rose.
func (l *Raised) Since() time.Time { return l.Steps[0].Since }

// Ratio is the page's level now, a multiple of its normal at the rise.
func (l *Raised) Ratio() float64 { return l.Steps[len(l.Steps)-1].Ratio }

// Burst is one surge of a page: when, its highest count, and how long
// its longest run above the normal lasted (0: remembered before lengths
// were kept, taken as burstGroup).
type Burst struct {
	At     time.Time     `json:"at"`
	Count  uint64        `json:"count"`
	Lasted time.Duration `json:"lasted,omitempty"`
	// Launch: the page's first burst, from a normal with no views (a new
	// page's launch), which its site's later new pages are judged
	// against (Launches).
	Launch bool `json:"launch,omitempty"`
}

// Armed reports whether threshold t may fire.
func (s State) Armed(t uint64) bool { return !slices.Contains(s.Fired, t) }

// Firing is one threshold that fires in this step.
type Firing struct {
	Threshold uint64
	// Key identifies the crossing within its rule and page, the same from
	// every sweeper: the episode for a rolling single-threshold rule (as
	// the sweeper numbers them today), "<window key>.<threshold>" for
	// calendar windows, "<threshold>" otherwise.
	Key string

	// Episodic rules only (StepEpisode): which message this is, the level
	// the count was measured against (the threshold, or factor × baseline),
	// how many times past it the count is, the escalate step reached, and
	// the episode (for resolve: as it ended, with its peak).
	Event    Event
	Level    float64
	Severity float64
	Step     float64
	Episode  Episode
	// Short is the other window the count that fired was over (unusual
	// rules: a burst's minutes, Reach.Short, or a drop's hours,
	// Reach.Long), 0: the rule's window.
	Short time.Duration
	// Lasted, when set, is how long the page had been past its normal
	// when it fired under its bursts' count, by outlasting them: their
	// runs last BurstsLast (unusual rules).
	Lasted, BurstsLast time.Duration
	// NewNormal is set on a resolve whose page had not come back: its
	// normal followed it, down or up (unusual rules, unusual_moved.go).
	NewNormal bool
	// Launch is set on a fire of a page in its launch (unusual rules),
	// judged against its site's launches: LaunchPassed is the one at
	// LaunchRank (the second largest, or 1 in 20 of a site that launches
	// many), which it passed (0: the site had too few, or it was heard
	// by outlasting them).
	Launch       bool
	LaunchPassed uint64
	LaunchRank   int
	// Bursts, when set, is how many remembered bursts of a page whose
	// bursts are its normal it fired past: BurstsPassed, what they reach
	// but 1 in 50, or factor × the highest (unusual rules, burstBound).
	Bursts       int
	BurstsPassed uint64
	// HoursBefore, when set, is the views of the hours before the window
	// a surge was heard against, the window usually HoursBeforeRatio ×
	// them
	// (unusual rules, weighRecent).
	HoursBefore      uint64
	HoursBeforeRatio float64
	// Raised, when set, is the multiple of its normal the page was
	// judged at, having risen for good (State.Raised), and Normal that
	// normal; on a resolve with NewNormal, the level it is judged at
	// from now. RaisedSince is when it rose.
	Raised      float64
	RaisedSince time.Time
	Normal      *Expected
	// LevelEnded is set on the resolve of a page that had risen for
	// good back at its old level (Raised and RaisedSince: the level it
	// left), keyed "<episode>.level.resolved" by levelEpisode, the
	// episode that raised it.
	LevelEnded   bool
	levelEpisode uint64
}

// Crossed is the one comparison every rule uses: "passed 1,000 views"
// means more than 1,000.
func Crossed(count, threshold uint64) bool { return count > threshold }

// Step is the re-arm state machine: given the state after the previous
// sweep, the count now and the time now, it returns the new state and the
// thresholds that fire, lowest first. It does not change prev.
//
//   - Calendar windows: a new window key clears what fired, so each
//     threshold fires at most once per window.
//   - Rolling, one threshold: a fired threshold re-arms when the count is
//     at or below threshold × (1 − hysteresis), or once cooldown has
//     passed since it fired. Re-arming is checked before firing, so a
//     cooldown that ends while the count is still high fires again now.
//   - Milestones and all-time windows never re-arm.
//   - Episodic rules (escalate or notify_on resolve) step as StepEpisode.
//   - An armed threshold that is crossed fires (the rising edge) and is
//     disarmed; every milestone crossed in the same sweep fires.
func (r *Rule) Step(prev State, count uint64, now time.Time) (State, []Firing) {
	if r.Episodic() {
		return r.StepEpisode(prev, Observation{At: now, Count: count})
	}
	next := prev
	next.Fired = slices.Clone(prev.Fired)

	if r.Window.Kind == Calendar {
		if key := r.Window.Key(now); key != next.Window {
			next.Window, next.Fired = key, nil
		}
	}
	if r.Window.Kind == Rolling && len(r.Thresholds) == 1 {
		t := r.Thresholds[0]
		if !next.Armed(t) && r.rearms(t, count, now, next.LastFired) {
			next.Fired = slices.DeleteFunc(next.Fired, func(f uint64) bool { return f == t })
		}
	}

	var fire []Firing
	for _, t := range r.Thresholds {
		if Crossed(count, t) && next.Armed(t) {
			next.Fired = append(next.Fired, t)
			fire = append(fire, Firing{Threshold: t})
		}
	}
	if len(fire) == 0 {
		return next, nil
	}
	next.Episode++
	next.LastFired = now
	for i := range fire {
		fire[i].Key = r.firingKey(next, fire[i].Threshold)
	}
	return next, fire
}

// RearmLevel is the count at or below which a fired rolling threshold
// re-arms.
func (r *Rule) RearmLevel(t uint64) uint64 {
	return uint64(math.Floor(float64(t) * (1 - r.Rearm.Hysteresis)))
}

func (r *Rule) rearms(t, count uint64, now, lastFired time.Time) bool {
	if count <= r.RearmLevel(t) {
		return true
	}
	return r.Rearm.Cooldown > 0 && !lastFired.IsZero() && now.Sub(lastFired) >= r.Rearm.Cooldown
}

func (r *Rule) firingKey(s State, t uint64) string {
	switch {
	case r.Window.Kind == Calendar:
		return s.Window + "." + strconv.FormatUint(t, 10)
	case r.Window.Kind == Rolling && !r.Thresholds.Milestones():
		return strconv.FormatUint(s.Episode, 10)
	}
	return strconv.FormatUint(t, 10)
}

// String is the threshold and key, and for an episode's message its kind.
func (f Firing) String() string {
	if f.Event == "" {
		return "{" + strconv.FormatUint(f.Threshold, 10) + " " + f.Key + "}"
	}
	return "{" + string(f.Event) + " " + f.Key + "}"
}
