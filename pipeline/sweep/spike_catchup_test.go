package sweep

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/rules"
)

// catchUpSpike is a spike rule that escalates and resolves, with a 30 m
// settle so a whole episode fits in a sweeper's downtime.
func catchUpSpike() rules.Rule {
	return rules.Rule{Name: "spike", Match: rules.Match{Prefix: "/"}, Window: rules.ParseWindow("1h"),
		Spike:    &rules.Spike{Factor: 4, MinCount: 50, Baseline: rules.Baseline{SameTime: &rules.SameTime{Days: 3}}},
		Escalate: []float64{3}, NotifyOn: []rules.Event{rules.EventFire, rules.EventEscalate, rules.EventResolve},
		Rearm: rules.Rearm{Hysteresis: 0.5, Settle: 30 * time.Minute}, Notify: rules.Notify{Recipients: []string{"ops@example.com"}}}
}

// spikeHistory loads three days of a page's normal before hour h: 20
// views in the hour before h and 500 in the hour before h+3h, so a
// catch-up judged against the later hour's normal could not fire.
func (b *bundle) spikeHistory(t *testing.T, h time.Time) {
	t.Helper()
	b.addHits(t, "/post", 1, h.Add(-5*24*time.Hour)) // the data begins
	for k := 1; k <= 3; k++ {
		day := h.Add(-time.Duration(k) * 24 * time.Hour)
		b.addHits(t, "/post", 20, day.Add(-30*time.Minute))
		b.addHits(t, "/post", 500, day.Add(3*time.Hour-30*time.Minute))
	}
}

// A sweeper down for three hours, while a page surged, escalated and went
// quiet again, catches up when it returns, with two sweepers racing: the
// fire and the escalate go out once each, stamped when they happened and
// judged against the normal of that hour (20), not of the hour it caught
// up in (500); the resolve goes out once, at the sweep that sees the
// episode settled, with the normal of the hour it resolves in. Later
// sweeps send nothing more.
func TestSpikeCatchUpAfterDowntimeOnceEach(t *testing.T) {
	b := setup(t)
	b.cfg.Rules = []rules.Rule{catchUpSpike()}
	h := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	b.spikeHistory(t, h)
	c := &clock{t: h.Add(5 * time.Minute)}
	b.sweep(t, b.sweeper(t, c)) // the last sweep before the downtime: nothing
	// While no sweeper runs: 100 views at h+10m (>= 4 × 20), 200 more at
	// h+12m (300 >= 3 × 80), then none.
	b.addHits(t, "/post", 100, h.Add(10*time.Minute))
	b.addHits(t, "/post", 200, h.Add(12*time.Minute))
	c.set(h.Add(3 * time.Hour))
	b.raceSweeps(t, c, 2)
	c.set(h.Add(3*time.Hour + time.Minute))
	b.raceSweeps(t, c, 2)

	var got []string
	for _, x := range b.jobs(t) {
		l := fmt.Sprintf("%s %s count %d", x.Event, x.CrossedAt.Sub(h), x.Count)
		if x.Why != nil {
			l += fmt.Sprintf(" base %.0f", x.Why.Baseline)
		}
		got = append(got, l)
	}
	slices.Sort(got)
	want := []string{
		"escalate 12m59s count 300 base 20",
		"fire 10m59s count 100 base 20",
		"resolve 3h0m0s count 0 base 500",
	}
	if !slices.Equal(got, want) {
		t.Errorf("jobs after the catch-up:\n%v\nwant\n%v", got, want)
	}
}

// Catching up reaches back catch_up (here 1 h), as for threshold rules:
// an episode that began and ended further back is not judged, so a
// sweeper returning after a long outage does not mail spikes that are
// long over; it logs that it skipped them.
func TestSpikeCatchUpStopsAtCatchUp(t *testing.T) {
	b := setup(t)
	b.cfg.Rules = []rules.Rule{catchUpSpike()}
	b.cfg.CatchUp = time.Hour
	h := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	b.spikeHistory(t, h)
	c := &clock{t: h.Add(5 * time.Minute)}
	b.sweep(t, b.sweeper(t, c))
	b.addHits(t, "/post", 300, h.Add(10*time.Minute))
	c.set(h.Add(3 * time.Hour))
	b.raceSweeps(t, c, 2)
	if jobs := b.jobs(t); len(jobs) != 0 {
		t.Errorf("a spike 2 h 50 m before the sweep, with catch_up 1 h, sent %d jobs: %+v", len(jobs), jobs)
	}
}
