package rules

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func stepRule(t *testing.T, window string, zone string, rearm Rearm, thresholds ...uint64) *Rule {
	t.Helper()
	r := &Rule{Name: "r", Site: "s", Match: Match{Exact: "/"}, Thresholds: thresholds,
		Window: ParseWindow(window), Zone: zone, Rearm: rearm, Notify: Notify{Recipients: []string{"a@example.com"}}}
	if err := r.Validate("r"); err != nil {
		t.Fatal(err)
	}
	return r
}

type step struct {
	at    time.Duration // since t0
	count uint64
	fire  string // the firings' keys, comma-separated
}

func run(t *testing.T, r *Rule, t0 time.Time, steps []step) State {
	t.Helper()
	var st State
	for i, s := range steps {
		prev := fmt.Sprint(st)
		next, fire := r.Step(st, s.count, t0.Add(s.at))
		if fmt.Sprint(st) != prev {
			t.Fatalf("step %d changed prev", i)
		}
		var keys []string
		for _, f := range fire {
			keys = append(keys, fmt.Sprintf("%d@%s", f.Threshold, f.Key))
		}
		if got := fmt.Sprint(keys); got != fmt.Sprint(splitNonEmpty(s.fire)) {
			t.Errorf("step %d (+%s, count %d): fired %s, want %s", i, s.at, s.count, got, fmt.Sprint(splitNonEmpty(s.fire)))
		}
		st = next
	}
	return st
}

func splitNonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

var t0 = time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)

func TestStepRisingEdgeAndHysteresis(t *testing.T) {
	r := stepRule(t, "1h", "", Rearm{Hysteresis: 0.1}, 1000)
	run(t, r, t0, []step{
		{0, 500, ""},
		{time.Minute, 1000, ""},           // at the threshold is not past it
		{2 * time.Minute, 1001, "1000@1"}, // rising edge
		{3 * time.Minute, 5000, ""},       // stays quiet while above
		{4 * time.Minute, 950, ""},        // below the threshold, above 900: still disarmed
		{5 * time.Minute, 1200, ""},       // so this is not a new crossing
		{6 * time.Minute, 900, ""},        // at 1000×(1−0.1): re-armed
		{7 * time.Minute, 1001, "1000@2"}, // and fires again, episode 2
	})
}

func TestStepNoHysteresisIsTodaysBehaviour(t *testing.T) {
	r := stepRule(t, "1h", "", Rearm{}, 1000)
	run(t, r, t0, []step{
		{0, 1001, "1000@1"},
		{time.Minute, 1000, ""}, // back to the threshold re-arms
		{2 * time.Minute, 1001, "1000@2"},
	})
}

func TestStepCooldown(t *testing.T) {
	r := stepRule(t, "1h", "", Rearm{Hysteresis: 0.5, Cooldown: 6 * time.Hour}, 1000)
	st := run(t, r, t0, []step{
		{0, 2000, "1000@1"},
		{6*time.Hour - time.Minute, 2000, ""},
		{6 * time.Hour, 2000, "1000@2"}, // cooldown over while still high: a reminder
		{7 * time.Hour, 2000, ""},
		{8 * time.Hour, 400, ""}, // hysteresis re-arms before the cooldown ends
		{8*time.Hour + time.Minute, 1500, "1000@3"},
	})
	if !st.LastFired.Equal(t0.Add(8*time.Hour + time.Minute)) {
		t.Errorf("LastFired = %s", st.LastFired)
	}
}

func TestStepCalendarOncePerWindow(t *testing.T) {
	// Berlin's 2026-03-29 has 23 hours; 22:00 UTC is already the 30th there.
	r := stepRule(t, "day", "Europe/Berlin", Rearm{}, 100)
	day := time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC) // 01:00 in Berlin
	run(t, r, day, []step{
		{0, 101, "100@2026-03-29.100"},
		{time.Hour, 5, ""},       // a count that falls does not re-arm a calendar window
		{2 * time.Hour, 500, ""}, // still the same day
		{21*time.Hour + 59*time.Minute, 900, ""},
		{22 * time.Hour, 50, ""},                    // new day, not crossed yet
		{23 * time.Hour, 101, "100@2026-03-30.100"}, // fires again in the new window
		{24 * time.Hour, 101, ""},
	})
}

func TestStepMilestones(t *testing.T) {
	r := stepRule(t, "all", "", Rearm{}, 100, 1000, 10000)
	st := run(t, r, t0, []step{
		{0, 50, ""},
		{time.Minute, 1500, "100@100,1000@1000"}, // two crossed in one sweep: both fire
		{2 * time.Minute, 1600, ""},
		{3 * time.Minute, 10001, "10000@10000"},
		{4 * time.Minute, 20000, ""},
	})
	if st.Episode != 2 || fmt.Sprint(st.Fired) != "[100 1000 10000]" {
		t.Errorf("state = %+v", st)
	}
	// Rolling milestones do not re-arm either, even when the count drops.
	r = stepRule(t, "1h", "", Rearm{}, 10, 20)
	run(t, r, t0, []step{
		{0, 25, "10@10,20@20"},
		{time.Minute, 0, ""},
		{2 * time.Minute, 25, ""},
	})
}

func TestStepCalendarMilestonesPerWindow(t *testing.T) {
	r := stepRule(t, "month", "America/New_York", Rearm{}, 10, 100)
	march := time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)
	run(t, r, march, []step{
		{0, 11, "10@2026-03.10"},
		{time.Hour, 101, "100@2026-03.100"},
		{15*time.Hour + 59*time.Minute, 500, ""}, // 23:59 in New York, 03:59 UTC on April 1
		{16 * time.Hour, 500, "10@2026-04.10,100@2026-04.100"},
	})
}

func TestStepAllTimeFiresOnce(t *testing.T) {
	r := stepRule(t, "all", "", Rearm{}, 1000)
	run(t, r, t0, []step{
		{0, 1001, "1000@1000"},
		{time.Hour, 0, ""},
		{2 * time.Hour, 5000, ""},
	})
}
