package rules

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// A rule with zone: auto reads a site's normal on the clocks learned for
// it (SpansOn), on UTC's while none are, and is alone in doing so.
func TestZoneAutoReadsTheSitesLearnedClocks(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	auto := unusualRule(t, Unusual{})
	auto.Zone = ZoneAuto
	named := unusualRule(t, Unusual{})
	named.Zone = "Europe/Berlin"
	utc := unusualRule(t, Unusual{})
	for _, r := range []*Rule{auto, named} {
		if err := r.Validate("rule"); err != nil {
			t.Fatal(err)
		}
	}
	if !LearnsClocks(auto) || LearnsClocks(named) || LearnsClocks(utc) {
		t.Fatalf("LearnsClocks: auto %v, named %v, utc %v", LearnsClocks(auto), LearnsClocks(named), LearnsClocks(utc))
	}
	if got, want := ClocksReach([]*Rule{named, auto, utc}), 5*7*24*time.Hour; got != want {
		t.Errorf("ClocksReach of a rule learning clocks over 4 weeks: %v, want %v (its weeks and their days)", got, want)
	}
	if got := ClocksReach([]*Rule{named, utc}); got != 0 {
		t.Errorf("ClocksReach of rules learning none: %v", got)
	}
	end := time.Date(2026, 3, 30, 9, 10, 0, 0, berlin) // the Monday after the EU's change
	if got, want := SpansOn(auto, end, time.Time{}, berlin), named.BaselineSpans(end, time.Time{}); !slices.Equal(got, want) {
		t.Errorf("auto on Berlin's clocks reads\n%v\nwant Berlin's own\n%v", got, want)
	}
	if got, want := SpansOn(auto, end, time.Time{}, nil), utc.BaselineSpans(end, time.Time{}); !slices.Equal(got, want) {
		t.Errorf("auto with no clocks learned reads\n%v\nwant UTC's\n%v", got, want)
	}
	if got, want := SpansOn(named, end, time.Time{}, time.UTC), named.BaselineSpans(end, time.Time{}); !slices.Equal(got, want) {
		t.Errorf("a rule naming its zone is moved by a site's learned clocks")
	}
}

func TestZoneAutoIsForUnusualRules(t *testing.T) {
	r := &Rule{Name: "t", Match: Match{Prefix: "/"}, Window: ParseWindow("day"), Thresholds: Thresholds{100}, Zone: ZoneAuto,
		Notify: Notify{Recipients: []string{"ops@example.com"}}}
	err := r.Validate("rules[0]")
	if err == nil || !strings.Contains(err.Error(), "rules[0].zone: auto (each site's clocks learned from its traffic) is for unusual rules") {
		t.Errorf("a threshold rule with zone: auto: %v", err)
	}
}
