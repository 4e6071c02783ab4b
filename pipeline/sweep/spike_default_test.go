package sweep

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// site writes five weeks of a page's views per 5 minutes from Monday
// 2026-03-02: a daily peak at 14:00 UTC (about 120 views an hour at
// night, 1,300 at the peak), weekends at weekend × a weekday, ±15% noise,
// whole days scaled by holidays, views added in spike and scaled to 2% in
// drop.
func site(weekend float64, holidays map[string]float64, spike, drop [2]time.Time) string {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	var b strings.Builder
	b.WriteString("timestamp,site,path,count\n")
	for i := 0; i < 35*288; i++ {
		t := start.Add(time.Duration(i) * 5 * time.Minute)
		h := float64(t.Hour()) + float64(t.Minute())/60
		v := 10 + 100*math.Exp(-math.Pow((h-14)/3, 2))
		if wd := t.Weekday(); wd == time.Saturday || wd == time.Sunday {
			v *= weekend
		}
		if f, ok := holidays[t.Format(time.DateOnly)]; ok {
			v *= f
		}
		v *= 1 + 0.15*math.Sin(float64(i)*12.9898) // deterministic noise
		if !t.Before(spike[0]) && t.Before(spike[1]) {
			v += 300
		}
		if !t.Before(drop[0]) && t.Before(drop[1]) {
			v *= 0.02
		}
		fmt.Fprintf(&b, "%s,shop.example,/pricing,%d\n", t.Format(time.RFC3339), int(v))
	}
	return b.String()
}

// The shipped default (deploy/rules/spike-default.yaml), on four judged
// weeks of a site with a strong daily and weekly rhythm and holidays that
// halve, double or cut traffic to a third, fires once at the injected
// surge and resolves once, 30 h after the hour is back; the rhythm, the
// holidays, an outage and the recovery after it fire nothing.
func TestShippedSpikeDefaultOnSeasonalTraffic(t *testing.T) {
	rs, err := LoadRules(Config{RulesPath: "../../deploy/rules/spike-default.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	spike := [2]time.Time{time.Date(2026, 4, 1, 3, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 4, 0, 0, 0, time.UTC)}
	drop := [2]time.Time{time.Date(2026, 3, 26, 13, 0, 0, 0, time.UTC), time.Date(2026, 3, 26, 17, 0, 0, 0, time.UTC)}
	since := time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		weekend  float64
		holidays map[string]float64
	}{
		{"weekends at 85%", 0.85, nil},
		// A B2B site: weekends at 30%; a Friday holiday at a third makes
		// three quiet days in a row, a sale day doubles traffic, and the
		// Tuesday after Easter Monday at half.
		{"weekends at 30%, holidays", 0.3, map[string]float64{"2026-03-20": 0.33, "2026-03-25": 2, "2026-04-06": 0.5, "2026-04-07": 0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			csv := site(tc.weekend, tc.holidays, spike, drop)
			var got []string
			for _, x := range backtestCSV(t, csv, since, rs...) {
				got = append(got, fmt.Sprintf("%s %s", x.Event, x.CrossedAt.Format("01-02 15:04")))
				if x.Event == "fire" && (x.Why == nil || x.Why.Factor != 4 || x.Why.Baseline < 80 || x.Why.Baseline > 200) {
					t.Errorf("fire: why %+v, want factor 4 and the night's normal", x.Why)
				}
			}
			// Fires once the surge's first two 5-minute rows are in the
			// hour (one, 300 on top of about 120, is short of 4 × 120);
			// back once its last row leaves the hour (04:55), resolved
			// 30 h later.
			want := "[fire 04-01 03:05 resolve 04-02 10:55]"
			if fmt.Sprint(got) != want {
				t.Errorf("crossings %v, want %s", got, want)
			}
		})
	}
}
