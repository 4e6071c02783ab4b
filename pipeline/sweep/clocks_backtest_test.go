package sweep

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/rules"
)

// The shipped rule learns each site's clocks (zone: auto): on a page
// whose readers keep New York's, it says what the rule naming that zone
// says once a day or two of the new clocks has shown them, and it is
// not moved on a page whose day stays put in UTC.
func TestZoneAutoLearnsASitesClocksInABacktest(t *testing.T) {
	shipped, err := LoadRules(Config{RulesPath: "../../deploy/rules/spike-default.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if shipped[0].Zone != rules.ZoneAuto {
		t.Fatalf("the shipped rule's zone is %q, want auto", shipped[0].Zone)
	}
	ruleIn := func(name, zone string) rules.Rule {
		r := shipped[0]
		r.Name, r.Zone = name, zone
		return r
	}
	change := time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		readers string
		moves   bool // the page's day moves in UTC with the change
	}{
		{"America/New_York", true},
		{"UTC", false},
	} {
		t.Run(tc.readers, func(t *testing.T) {
			loc, err := time.LoadLocation(tc.readers)
			if err != nil {
				t.Fatal(err)
			}
			start := change.Add(-14 * 24 * time.Hour)
			d := change.AddDate(0, 0, 9)
			surge := time.Date(d.Year(), d.Month(), d.Day(), 15, 0, 0, 0, loc)
			csv := localRhythm(loc, start, [2]time.Time{surge, surge.Add(time.Hour)})
			xs := backtestCSV(t, csv, start.Add(7*24*time.Hour),
				ruleIn("auto", rules.ZoneAuto), ruleIn("named", "America/New_York"), ruleIn("utc", ""))
			fires := map[string][]time.Time{}
			for _, x := range xs {
				if x.Event == "fire" {
					fires[x.Rule] = append(fires[x.Rule], x.CrossedAt)
					if x.Rule == "auto" && !x.CrossedAt.Before(surge) {
						if want := map[bool]string{true: tc.readers}[tc.moves]; x.Why.Clock != want {
							t.Errorf("the surge's why reads clocks %q, want %q: %s", x.Why.Clock, want, x.Why.ExpectedText())
						}
					}
				}
			}
			onlySurge := func(ts []time.Time, from time.Time) bool {
				for _, f := range ts {
					if !f.Before(from) && (f.Before(surge) || !f.Before(surge.Add(2*time.Hour))) {
						return false
					}
				}
				return slices.ContainsFunc(ts, func(f time.Time) bool { return !f.Before(surge) && f.Before(surge.Add(2*time.Hour)) })
			}
			learnt := change.Add(2 * 24 * time.Hour)
			if !onlySurge(fires["auto"], learnt) {
				t.Errorf("zone auto fired at %v; want only the surge at %s from %s on", fires["auto"], surge.UTC().Format(time.DateTime), learnt.Format(time.DateOnly))
			}
			own := map[bool]string{true: "named", false: "utc"}[tc.moves]
			if !onlySurge(fires[own], start) {
				t.Errorf("the rule on the readers' own clocks (%s) fired at %v; the test's page is not what it says", own, fires[own])
			}
			other := map[bool]string{true: "utc", false: "named"}[tc.moves]
			if onlySurge(fires[other], start) {
				t.Errorf("the rule on the wrong clocks (%s) fired only at the surge: %v; the test does not show what learning does", other, fires[other])
			}
			if !tc.moves && fmt.Sprint(fires["auto"]) != fmt.Sprint(fires["utc"]) {
				t.Errorf("on a page whose day stays put in UTC, zone auto fired at %v, UTC at %v", fires["auto"], fires["utc"])
			}
		})
	}
}
