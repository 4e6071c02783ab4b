package rules

import (
	"cmp"
	"fmt"
	"math"
	"time"
)

// Unusual judges each page against the normal of its own history at this
// time of the week, with a noise model made for counts, in both
// directions and on two time scales, so one rule fits every page of
// every site:
//
//	unusual:
//	  direction: both        # up, down or both (default)
//	  sensitivity: 5         # how many noise units from the normal fires (default 5)
//	  factor: 1.5            # and at least 1.5 × the top of the normal (down: below the bottom / 1.5)
//	  min_count: 20          # and at least 20 views (down: a normal of at least 20)
//	  burst: 10m             # also judge the last 10 minutes against the same normal (twice the evidence in a first week); 0s: off
//	  down_for: 2h           # a drop must last this long before it is heard (in its hour, or its hours together: window + down_for)
//	  weeks: 4               # weeks of history the weekly profile reads
//
// The normal (docs/unusual-rules.md has the why of each choice):
//   - with 3 or more past weeks: the median of the same window at the
//     same wall-clock time on the same weekday of each past week, in the
//     rule's zone (DST-aware): the week's rhythm, robust to a past surge
//     or holiday in one of them;
//   - with 1 or 2 weeks: a range from that weekly figure to the median of
//     the same hour over the last 6 days, since neither alone is sure yet;
//   - with 1 to 6 days: the median of the same hour over the days there
//     are ("normal from 3 days of history"; from one day, that day's
//     hour, its range widened by the one sample's uncertainty);
//   - on its first day: not judged.
//
// The noise is a negative binomial: a count's variance is μ + φμ², with
// φ estimated from the spread of the page's own samples (shrunk towards
// a prior while they are few), and the normal's own uncertainty added.
// A count fires up when its variance-stabilised distance above the top
// of the normal is at least sensitivity (and above the floors); down
// when it, or the count of the window and down_for together against
// their own normal (a small page's drop), is 0.9 × as far below the
// bottom for down_for (it must last; twice as far before the normal
// knows the week: a page's launch settling, or its first quiet weekend,
// is no drop). Every surge is remembered in the page's state for 4
// weeks, told or not, and a count must pass the second highest of them
// by a noise unit to be news: a page's bursts are its normal.
type Unusual struct {
	Direction   Direction      `yaml:"direction"`
	Sensitivity float64        `yaml:"sensitivity"`
	Factor      float64        `yaml:"factor"`
	MinCount    uint64         `yaml:"min_count"`
	Burst       *time.Duration `yaml:"burst,omitempty"`
	DownFor     time.Duration  `yaml:"down_for"`
	Weeks       int            `yaml:"weeks"`
}

// Defaults of the unusual detector (docs/unusual-rules.md).
const (
	DefaultSensitivity   = 5.0
	DefaultUpFactor      = 1.5
	DefaultUnusualMin    = 20
	DefaultBurst         = 10 * time.Minute
	DefaultDownFor       = 2 * time.Hour
	DefaultWeeks         = 4
	DefaultUnusualSettle = time.Hour
	MaxUnusualWeeks      = 12

	// burstMargin is how many noise units (of pure counting noise) a
	// count must pass the second highest of the page's remembered bursts
	// by to be news.
	burstMargin = 1.0
	// pastSpan is how long a page's bursts are remembered
	// (Observation.Bursts): a count it reached twice in 4 weeks is its
	// normal, not news.
	pastSpan = 28 * 24 * time.Hour
	// phiPrior is the overdispersion assumed before a page's own samples
	// say otherwise (√0.04: a 20% spread between like hours of large
	// pages), and phiPriorWeight how many samples it counts as.
	phiPrior       = 0.04
	phiPriorWeight = 2.0
	// firstWeekBurstZ multiplies sensitivity for a burst judged before
	// the normal knows the week.
	firstWeekBurstZ = 2.0
	// firstWeekDropZ multiplies sensitivity for a drop judged before the
	// normal knows the week (unusualDetector.dropLevel).
	firstWeekDropZ = 2.0
	// dropZ multiplies sensitivity for a drop once the normal knows the
	// week: a drop is told only after down_for more sweeps past its
	// level, which a surge is not asked, so its level can sit nearer
	// (unusualDetector.dropLevel).
	dropZ = 0.9
	// recentFloor is the least spread (of the logarithm) a window's
	// ratio to its hours before is taken to have: the 14 % a page's
	// noise is never taken under (noiseFloor, 0.02, its square).
	recentFloor = 0.1414
	// usualZ is how wide the usual range is: about 19 in 20 normal
	// windows fall inside ±2 noise units.
	usualZ = 2.0
)

func (u *Unusual) burst() time.Duration {
	if u.Burst == nil {
		return DefaultBurst
	}
	return *u.Burst
}

// validateUnusual fills in defaults and checks the settings.
func (r *Rule) validateUnusual(add func(field, format string, args ...any)) {
	u := r.Unusual
	switch u.Direction {
	case "":
		u.Direction = Both
	case Up, Down, Both:
	default:
		add(".unusual.direction", "must be up, down or both, got %q", u.Direction)
	}
	if u.Sensitivity == 0 {
		u.Sensitivity = DefaultSensitivity
	}
	if !(u.Sensitivity >= 1) || u.Sensitivity > 100 {
		add(".unusual.sensitivity", "noise units from the normal, 1 to 100 (like 5), got %v", u.Sensitivity)
	}
	if u.Factor == 0 {
		u.Factor = DefaultUpFactor
	}
	if !(u.Factor >= 1) || u.Factor > 1e6 {
		add(".unusual.factor", "a multiple of the normal's top, at least 1 (like 1.5), got %v", u.Factor)
	}
	if u.MinCount == 0 {
		u.MinCount = DefaultUnusualMin
	}
	if u.Burst == nil {
		b := DefaultBurst
		u.Burst = &b
	}
	if b := *u.Burst; b < 0 || b%time.Minute != 0 || (b != 0 && (b < time.Minute || b >= r.Window.Rolling)) {
		add(".unusual.burst", "whole minutes shorter than the window (like 10m), or 0s for none, got %s", b)
	}
	if u.DownFor == 0 {
		u.DownFor = DefaultDownFor
	}
	if u.DownFor < 0 || u.DownFor > 7*24*time.Hour {
		add(".unusual.down_for", "how long a drop must last, up to 7d (like 2h), got %s", u.DownFor)
	}
	if u.Weeks == 0 {
		u.Weeks = DefaultWeeks
	}
	if u.Weeks < 1 || u.Weeks > MaxUnusualWeeks {
		add(".unusual.weeks", "must be 1..%d, got %d", MaxUnusualWeeks, u.Weeks)
	}
	if r.Rearm.Settle == 0 {
		r.Rearm.Settle = DefaultUnusualSettle
	}
	if r.Rearm.Hysteresis != 0 {
		add(".rearm.hysteresis", "unusual episodes end when the count is back in its usual range (rearm.settle says for how long); hysteresis does not apply")
	}
}

// unusualDetector is the compiled Unusual.
type unusualDetector struct {
	r *Rule
	u *Unusual
}

func (d *unusualDetector) Kind() Kind      { return KindUnusual }
func (d *unusualDetector) LooksDown() bool { return d.u.Direction != Up }

// HoldsLateDrops: when it looks down.
func (d *unusualDetector) HoldsLateDrops() bool { return d.LooksDown() }

func (d *unusualDetector) Reach() Reach {
	var r Reach
	if d.u.Direction != Down {
		r.Short = d.u.burst()
	}
	r.Long = d.long()
	return r
}

// QuietBelow: 0 when the rule looks down (a page at 0 views is what it
// listens for); else the smallest count that can fire, the burst's.
func (d *unusualDetector) QuietBelow() uint64 {
	if d.LooksDown() {
		return 0
	}
	return d.burstMin()
}

// burstMin is the floor of a burst's count: min_count scaled to the
// burst, but at least 5 views.
func (d *unusualDetector) burstMin() uint64 {
	b := d.u.burst()
	if b == 0 {
		return d.u.MinCount
	}
	return max(5, uint64(math.Ceil(float64(d.u.MinCount)*float64(b)/float64(d.r.Window.Rolling))))
}

func (d *unusualDetector) weigh(o Observation, ep *Episode) judgement {
	e, u := o.Expected, d.u
	if !e.OK {
		return judgement{}
	}

	up := d.weighUp(o, ep != nil)
	dn := d.weighDown(o)
	switch {
	case ep != nil && ep.Down:
		if o.Late {
			return judgement{} // a drop in data not all there: hold
		}
		if d.tooSmallToTell(o, ep) {
			// At an hour whose normal is too small to tell a page gone
			// quiet from one back (its night), hold: neither back nor
			// still down. Not for ever: a page whose normal stays that
			// small for days has a new normal, judged as before.
			if heldStill(ep, o.At) {
				return judgement{small: true}
			}
			dn.small = true // still small: SmallSince stays, the hold does not begin again
		}
		// A drop began down_for and a window before it fired. Back
		// inside a range read mostly from days since then, and still
		// under its middle, the page has not come back: its normal
		// followed it down (unusual_moved.go).
		dn.began = cmp.Or(ep.Began, ep.Since.Add(-d.r.Window.Rolling-u.DownFor))
		dn.followed = normalFollowed(e, d.r.Window.Rolling, o.At, dn.began)
		dn.moved = float64(o.Count) <= e.Value && dn.followed
		if e.Bottom >= float64(u.MinCount) {
			dn.depth = max(float64(o.Count), 0.5) / e.Bottom
		}
		if !dn.moved && !dn.small && cannotTellDown(o, ep, d.long()) && d.back(dn, o, ep) {
			// At an hour whose range would hold the drop at its depth (a
			// page's night, where a page at a third of its normal for good
			// was told back to normal), hold, as a surge is held.
			if heldStill(ep, o.At) {
				return judgement{small: true}
			}
			dn.small = true
			// Held for days, no hour able to tell: a page still at the
			// level it fell to has not come back. Its range widened by
			// its drop's own days, which its noise is read from, it was
			// told "back to normal" a week or two into a fall for good.
			if k := ep.LastDay; k > 0 && k <= 1/u.Factor {
				dn.moved = true
			}
		}
		return dn
	case ep != nil:
		top := e.Top
		if o.levelTop > 0 {
			top = o.levelTop // measured against the level it is at
		}
		if top >= float64(u.MinCount) {
			// How big the surge is, at hours big enough to say: at a
			// quiet one a few views are many times its normal.
			up.ratio = float64(o.Count) / top
		}
		if cannotTellUp(o, ep, d.long()) && d.back(up, o, ep) {
			// At an hour whose range would hold the surge at its size
			// (a page's night), hold: neither back nor still up, for a
			// while, as a drop is held.
			if heldStill(ep, o.At) {
				return judgement{small: true}
			}
			up.small = true
		}
		// Back inside a range read mostly from days since it took off,
		// and still over its middle: it stayed up, and its normal
		// followed it (unusual_moved.go).
		up.followed = normalFollowed(e, d.r.Window.Rolling, o.At, ep.Since.Add(-d.r.Window.Rolling))
		up.moved = float64(o.Count) >= e.Value && up.followed
		up.under = u.Direction != Up && (dn.pending || dn.lingers) && !up.small
		return up
	case u.Direction == Up:
		return up
	case u.Direction == Down:
		return dn
	case up.fires:
		return up
	}
	dn.burst = up.burst
	return dn
}

// Against: the normal, its usual range and the history it came from.
func (d *unusualDetector) Against(o Observation, f Firing) Against {
	if f.Normal != nil {
		o.Expected = *f.Normal // a page at its new level (unusual_level.go)
	}
	e := o.Expected
	a := Against{Baseline: e.Value, Low: e.Low, High: e.High, Days: e.Days, Weekly: e.Weekly, Trend: e.Trend,
		Burst: f.Short, Direction: direction(f.Episode), Lasted: f.Lasted, BurstsLast: f.BurstsLast, NewNormal: f.NewNormal,
		Launch: f.Launch, LaunchPassed: f.LaunchPassed, LaunchRank: f.LaunchRank, Bursts: f.Bursts, BurstsPassed: f.BurstsPassed,
		HoursBefore: f.HoursBefore, HoursBeforeRatio: f.HoursBeforeRatio}
	if f.HoursBefore > 0 {
		a.HoursBeforeSpan = d.long() - d.r.Window.Rolling
	}
	if l := e.Long; f.Short > 0 && f.Short == d.long() && f.Episode.Down && l.OK {
		// Heard on its hours: those, as a burst's minutes are said.
		a.Short, a.ShortBaseline, a.ShortLow, a.ShortHigh = o.Long, l.Value, l.Low, l.High
	} else if f.Short > 0 && e.OK {
		// In a climb (burstTop) its normal is raised as its top is.
		scale := float64(f.Short) / float64(d.r.Window.Rolling)
		top := burstTop(o, d.r.Window.Rolling, f.Short)
		a.Short, a.ShortBaseline = o.Short, e.Value*scale
		if e.Top > 0 {
			a.ShortBaseline *= top / (e.Top * scale)
		}
		a.ShortLow = max(0, d.countAt(e, e.Bottom*scale, -usualZ))
		a.ShortHigh = d.countAt(e, top, usualZ)
	}
	return a
}

// SettleKey: the settings Settled and the normal read (the rule's
// window, zone and what it counts, and the detector's own), all but the
// rule's name, pages and receivers.
func (d *unusualDetector) SettleKey() string {
	u, r := d.u, d.r
	return fmt.Sprintf("unusual %s %g %g %d %s %s %d|%s %s|%s|%s", u.Direction, u.Sensitivity, u.Factor, u.MinCount,
		u.burst(), u.DownFor, u.Weeks, r.Window.Rolling, r.Window.zone(), r.Zone, r.Count)
}

// Settled: the count neither fires nor is a burst to remember nor a
// drop beginning, against a known normal.
func (d *unusualDetector) Settled(o Observation) bool {
	if !o.Expected.OK {
		return true // unknown normal: StepEpisode leaves the state as it is
	}
	up := d.weighUp(o, false)
	if up.fires || up.burst {
		return false
	}
	if d.u.Direction == Up {
		return true // a drop beginning is nothing to it
	}
	dn := d.weighDown(o)
	return !dn.pending && !dn.fires
}

// weighUp: the window's count, or the burst's against the normal scaled
// to it, far enough above the top of the normal, past the floors. A
// count that passes them but not the page's own usual bursts
// (Observation.Bursts) is a burst to remember, not to tell. open: an
// episode is open, and its level stays the one it fired at.
func (d *unusualDetector) weighUp(o Observation, open bool) judgement {
	// A page's bursts are its normal: a count it reached twice in the
	// last 4 weeks is no news, nor one within a noise unit of it.
	floor, bursts := 0.0, 0
	if b := nthHighest(o.Bursts, o.At.Add(-pastSpan), o.Above, burstRank(o)); b > 0 {
		r := math.Sqrt(float64(b)+0.375) + burstMargin/2
		floor = r*r - 0.375
		if !o.Launching {
			// A page at nothing between its bursts at this hour (a
			// newsletter, a cron job), or whose bursts dwarf what its
			// own normal fires at: its bursts are all the normal it
			// has, and their sizes vary more than counting's noise.
			// Passing the second highest, a page's like bursts were
			// news 2 times in n + 1. (Not "its normal under
			// min_count": a rule asking 40 views took a tweet series'
			// quiet hours for nothing, and lost 2 of its windows.)
			e := o.Expected
			own := max(d.countAt(e, e.Top, d.u.Sensitivity), d.u.Factor*e.Top)
			bb, n, typical := burstBound(o.Bursts, o.At.Add(-pastSpan), o.Above, d.u.Sensitivity/DefaultSensitivity, d.u.Factor)
			if bb > floor && (e.Top < 1 || typical >= burstsApart*own) {
				floor, bursts = bb, n
			}
		}
	}
	j := d.weighUpOver(o, floor)
	if !j.fires && !open {
		// Not in an open episode: its level is the one it fired at,
		// which escalation is measured against.
		weighRecent(o, d.r, floor, &j)
	}
	if j.fires && bursts > 0 && j.level == floor {
		j.bursts = bursts
	}
	if j.fires || open || floor == 0 {
		return j
	}
	// Unless the surge outlasts them: a page whose cron job or
	// newsletter brings an hour of a thousand views now and then,
	// holding at several times its normal for longer than its bursts
	// ever did by a whole window, is heard at its normal's level.
	if lasted, usual, ok := d.outlasts(o); ok {
		if k := d.weighUpOver(o, 0); k.fires {
			k.lasted, k.burstsLast = lasted, usual
			return k
		}
	}
	return j
}

// weighUpOver is weighUp with the page's bursts' floor given.
func (d *unusualDetector) weighUpOver(o Observation, floor float64) judgement {
	e, u := o.Expected, d.u
	c := float64(o.Count)
	profile := max(d.countAt(e, e.Top, u.Sensitivity), u.Factor*e.Top, float64(u.MinCount))
	j := judgement{known: true, level: max(profile, floor)}
	j.severity = c / j.level
	j.fires = c >= j.level
	j.burst = c >= profile
	if b := u.burst(); b > 0 && u.Direction != Down {
		mu := burstTop(o, d.r.Window.Rolling, b)
		pb := max(d.countAt(e, mu, u.Sensitivity), u.Factor*mu, float64(d.burstMin()))
		j.burst = j.burst || float64(o.Short) >= pb
		lb := max(pb, floor)
		if !e.Weekly {
			// Under a week of history the page's own bursts are still
			// being learnt (remembered, above), and minutes against an
			// hour's normal from a few days would tell its usual
			// burstiness as news: a burst then needs twice the evidence.
			lb = max(lb, d.countAt(e, mu, firstWeekBurstZ*u.Sensitivity))
		}
		j.shortLevel = lb
		if s := float64(o.Short) / lb; s > j.severity {
			j.severity, j.short = s, true
		}
		j.fires = j.fires || float64(o.Short) >= lb
	}
	return j
}

// back: inside the usual range again; up, also within factor of the
// normal's top (the bar a fire must pass): at a page's night the range
// is wide, and 3 × its normal sits in it (as a surge of 2 × sits under
// min_count, where nothing can fire but nothing says it is over); and a
// surge of hours, its hours together back in their range too.
func (d *unusualDetector) back(_ judgement, o Observation, ep *Episode) bool {
	if ep.Down {
		// Back in its hour's range; heard on its hours, back in theirs
		// too (its hour's may reach down to the drop).
		if d.byItsHours(o, ep) && float64(o.Long) < o.Expected.Long.Low {
			return false
		}
		return float64(o.Count) >= o.Expected.Low
	}
	e := o.Expected
	if l := e.Long; l.OK && o.At.Sub(ep.Since) >= d.long() && (o.LongLate || float64(o.Long) > l.High) {
		// A surge that has lasted longer than its hours together is
		// back when they are too (hours with late data say nothing):
		// a page twice its size for good sits inside its night's wide
		// range, and was told back each night and taking off again
		// each morning. A burst of minutes is over before its hours
		// would say so, and is judged on its hour.
		return false
	}
	// Within factor of the top, or as far above it as an ordinary hour
	// of the page reaches by its own noise (2 units): a page whose days
	// vary by 25 % passes 1.5 × its normal on one hour in 20, and an
	// episode of it stayed open 12 days waiting for an hour without one.
	back := d.u.Factor
	if e.Noise > 0 {
		back = max(back, math.Exp(usualZ*math.Sqrt(e.Noise)))
	}
	return float64(o.Count) <= min(e.High, back*e.Top)
}

// outlasts: the page's current run of surges has lasted longer
// than the second longest of its remembered bursts (usual) by the
// rule's window.
func (d *unusualDetector) outlasts(o Observation) (lasted, usual time.Duration, ok bool) {
	if o.Above.IsZero() {
		return 0, 0, false
	}
	lasted = o.At.Sub(o.Above)
	if o.Launching {
		usual = nthLongest(o.Bursts, o.At.Add(-pastSpan), burstRank(o)) // other pages' launches
	} else {
		usual = secondLongest(o.Bursts, o.At.Add(-pastSpan), o.Above)
	}
	return lasted, usual, lasted >= usual+d.r.Window.Rolling
}
