package sweep

import (
	"fmt"
	"testing"
	"time"
)

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
		// three quiet days in a row, a sale day doubles traffic, and
		// Maundy Thursday and Good Friday are at half (the day after the
		// surge, while its episode settles).
		{"weekends at 30%, holidays", 0.3, map[string]float64{"2026-03-20": 0.33, "2026-03-25": 2, "2026-04-02": 0.5, "2026-04-03": 0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			csv, _ := seasonal(tc.weekend, tc.holidays, spike, drop)
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
