// Package syntheval scores a rules file on generated pages: the six
// classes of traffic issue #23 names (the week's rhythm, drops, short
// bursts, short histories, daily bursts, a normal of zero) and three a
// real site adds (a trend, clocks that change for daylight saving, a big
// page whose days vary more than Poisson's noise), and one with the
// week's rhythm, clocks and drops together, each at several sizes
// and row intervals, with labelled events. It is counted as `make eval`
// counts the NAB tweets (package nabeval), so the two read alike.
//
// It is a check on the rule's reach, not a target: the pages are drawn
// from fixed seeds chosen before any result was seen, and a setting
// changed to win one of them is a setting tuned to this generator.
package syntheval

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/pagewatch/pagewatch/internal/nabeval"
)

// Page is one generated page: its rhythm, its noise, the bursts that are
// its normal, and the labelled events a user wants told.
type Page struct {
	Family string
	Name   string
	Start  time.Time
	Days   int
	Step   time.Duration // one row per step, its views over the step

	Peak     float64 // mean views an hour at a weekday's busiest hour
	PeakHour float64 // the busiest hour on the page's clocks
	Night    float64 // the quietest hour, as a share of Peak
	Weekend  float64 // Saturday's and Sunday's views as a share of a weekday's
	// FriSatNights multiplies Friday's and Saturday's nights (22:00-04:00):
	// nightlife, 1 for none.
	FriSatNights float64
	Growth       float64        // the level's factor per week (1: flat)
	Clock        *time.Location // the clocks the page's readers keep
	DayNoise     float64        // sigma of a day's log level
	HourNoise    float64        // sigma of an hour's log level

	Bursts []Burst // the page's normal: newsletters, bots
	Events []Event // what the page should be told about
}

// Burst is extra views the page gets again and again.
type Burst struct {
	First time.Duration // after Start
	Every time.Duration // the gap, plus up to Jitter
	Jit   time.Duration
	Len   time.Duration
	Views float64 // views over Len
}

// Event multiplies the page's views by Factor over [At, At+Len) and adds
// Views spread over it (an event of views alone has Factor 1: 0 would
// empty the page's rows).
type Event struct {
	At     time.Duration // after Start
	Len    time.Duration
	Factor float64
	Views  float64
	// Label, when set, is how much of it from At is labelled: a rise
	// for good is news in its first hours, and a surge on top of it
	// later is an event of its own.
	Label time.Duration
}

// Window is the span in which an alarm catches an event: from its start
// to two hours past its end, or its label's (a drop is told only once
// it has lasted).
func (e Event) Window(start time.Time) [2]time.Time {
	l := e.Len
	if e.Label > 0 {
		l = e.Label
	}
	return [2]time.Time{start.Add(e.At), start.Add(e.At + l + 2*time.Hour)}
}

// Series draws the page's rows from seed.
func (p Page) Series(seed uint64) nabeval.Series {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	s := nabeval.Series{Name: p.Name + ".csv"}
	for _, e := range p.Events {
		s.Windows = append(s.Windows, e.Window(p.Start))
	}
	end := p.Start.Add(time.Duration(p.Days) * 24 * time.Hour)
	extra := p.burstViews(rng, end)
	dayLevel := map[string]float64{}
	hourLevel := map[time.Time]float64{}
	for t := p.Start; t.Before(end); t = t.Add(p.Step) {
		local := t.In(p.Clock)
		day := local.Format(time.DateOnly)
		if _, ok := dayLevel[day]; !ok {
			dayLevel[day] = math.Exp(p.DayNoise * rng.NormFloat64())
		}
		hour := t.Truncate(time.Hour)
		if _, ok := hourLevel[hour]; !ok {
			hourLevel[hour] = math.Exp(p.HourNoise * rng.NormFloat64())
		}
		mean := p.rate(t) * dayLevel[day] * hourLevel[hour] * p.Step.Hours()
		for _, e := range p.Events {
			// The share of the row the event covers.
			at := p.Start.Add(e.At)
			if share := overlap(t, t.Add(p.Step), at, at.Add(e.Len)).Minutes() / p.Step.Minutes(); share > 0 {
				mean *= 1 + (e.Factor-1)*share
				mean += e.Views * share * p.Step.Minutes() / e.Len.Minutes()
			}
		}
		mean += extra[t]
		s.Times = append(s.Times, t)
		s.Values = append(s.Values, poisson(rng, mean))
	}
	return s
}

// rate is the page's mean views an hour at t, before noise and events.
func (p Page) rate(t time.Time) float64 {
	local := t.In(p.Clock)
	h := float64(local.Hour()) + float64(local.Minute())/60
	d := math.Abs(h - p.PeakHour)
	d = min(d, 24-d)
	shape := p.Night + (1-p.Night)*math.Exp(-(d/4.5)*(d/4.5))
	wd := local.Weekday()
	if wd == time.Saturday || wd == time.Sunday {
		shape *= p.Weekend
	}
	night := local.Hour() >= 22 || local.Hour() < 4
	fri := (wd == time.Friday && local.Hour() >= 22) || (wd == time.Saturday && local.Hour() < 4)
	sat := (wd == time.Saturday && local.Hour() >= 22) || (wd == time.Sunday && local.Hour() < 4)
	if night && (fri || sat) {
		shape *= p.FriSatNights
	}
	weeks := t.Sub(p.Start).Hours() / (24 * 7)
	return p.Peak * shape * math.Pow(p.Growth, weeks)
}

// burstViews spreads the bursts' views over the rows they fall in.
func (p Page) burstViews(rng *rand.Rand, end time.Time) map[time.Time]float64 {
	out := map[time.Time]float64{}
	for _, b := range p.Bursts {
		for at := p.Start.Add(b.First); at.Before(end); {
			per := b.Views / max(1, b.Len.Minutes())
			for m := time.Duration(0); m < b.Len; m += time.Minute {
				out[p.rowOf(at.Add(m))] += per
			}
			gap := b.Every
			if b.Jit > 0 {
				gap += time.Duration(rng.Int64N(int64(b.Jit)))
			}
			at = at.Add(gap)
		}
	}
	return out
}

// rowOf is the start of the row t falls in (rows begin at Start).
func (p Page) rowOf(t time.Time) time.Time {
	return p.Start.Add(t.Sub(p.Start) / p.Step * p.Step)
}

// overlap is how long [a, b) and [c, d) share.
func overlap(a, b, c, d time.Time) time.Duration {
	from, to := a, b
	if c.After(from) {
		from = c
	}
	if d.Before(to) {
		to = d
	}
	return max(0, to.Sub(from))
}

// poisson draws a count of mean (a normal above 30, as Poisson's is
// close to it there).
func poisson(rng *rand.Rand, mean float64) uint64 {
	if mean <= 0 {
		return 0
	}
	if mean > 30 {
		return uint64(max(0, math.Round(mean+math.Sqrt(mean)*rng.NormFloat64())))
	}
	l, k, q := math.Exp(-mean), uint64(0), 1.0
	for {
		q *= rng.Float64()
		if q <= l {
			return k
		}
		k++
	}
}

// String names the page's shape in a line.
func (p Page) String() string {
	return fmt.Sprintf("%s: %d days, rows every %s, %g views an hour at its peak", p.Name, p.Days, p.Step, p.Peak)
}
