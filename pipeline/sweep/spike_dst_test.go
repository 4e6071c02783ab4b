package sweep

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/rules"
)

// localRhythm writes four weeks of a page's views per 5 minutes around
// start with a daily peak at 10:00 local time in loc, so the peak moves
// an hour in UTC when the clocks change; spike adds views in its span.
func localRhythm(loc *time.Location, start time.Time, spike [2]time.Time) string {
	var b strings.Builder
	b.WriteString("timestamp,site,path,count\n")
	for i := 0; i < 28*288; i++ {
		t := start.Add(time.Duration(i) * 5 * time.Minute)
		l := t.In(loc)
		h := float64(l.Hour()) + float64(l.Minute())/60
		v := 2 + 40*math.Exp(-((h-10)/1.2)*((h-10)/1.2)) // per 5 minutes: 24 an hour at night, about 500 at the peak
		if !t.Before(spike[0]) && t.Before(spike[1]) {
			v += 60
		}
		fmt.Fprintf(&b, "%s,local.example,/pricing,%d\n", t.Format(time.RFC3339), int(v))
	}
	return b.String()
}

// A same_time {weeks: N} baseline in the site's zone compares the same
// local time of week across a DST change (spring and autumn), where the
// same rule in UTC compares the peak with the hour before it for a week
// after the change and fires every day of it.
func TestSameTimeWeeksAcrossDST(t *testing.T) {
	for _, tc := range []struct {
		zone   string
		change time.Time // the day the clocks change, UTC midnight
	}{
		{"America/New_York", time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC)}, // 02:00 EST -> 03:00 EDT
		{"Europe/Berlin", time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC)},  // 03:00 CEST -> 02:00 CET
	} {
		t.Run(tc.zone, func(t *testing.T) {
			loc, err := time.LoadLocation(tc.zone)
			if err != nil {
				t.Fatal(err)
			}
			start := tc.change.Add(-14 * 24 * time.Hour)
			// A real surge nine days after the change, at 15:00 local.
			d := tc.change.AddDate(0, 0, 9)
			at := time.Date(d.Year(), d.Month(), d.Day(), 15, 0, 0, 0, loc)
			csv := localRhythm(loc, start, [2]time.Time{at, at.Add(time.Hour)})
			rule := func(name, zone string) rules.Rule {
				r := spikeRuleOf(name, rules.Spike{Factor: 3, MinCount: 60, Baseline: rules.Baseline{SameTime: &rules.SameTime{Weeks: 2}}})
				r.Zone, r.Rearm.Settle = zone, 0
				return r
			}
			xs := backtestCSV(t, csv, start.Add(7*24*time.Hour), rule("local", tc.zone), rule("utc", ""))
			got := map[string][]string{}
			for _, x := range xs {
				if x.Event == "fire" {
					got[x.Rule] = append(got[x.Rule], x.CrossedAt.In(loc).Format("01-02 15"))
				}
			}
			surge := at.Format("01-02 15")
			if fmt.Sprint(got["local"]) != fmt.Sprint([]string{surge}) {
				t.Errorf("in %s the rule fired at %v, want only at the surge %s (local times)", tc.zone, got["local"], surge)
			}
			// In UTC the peak is an hour early (spring) or late (autumn)
			// against both past weeks for the first week after the
			// change: the UTC rule fires on its rising edge every day.
			days := map[string]bool{}
			for _, f := range got["utc"] {
				days[f[:5]] = true
			}
			for k := 0; k < 7; k++ {
				if day := tc.change.AddDate(0, 0, k).Format("01-02"); !days[day] {
					t.Errorf("the same rule in UTC did not fire on %s, %d days after the change: %v", day, k, got["utc"])
				}
			}
		})
	}
}
