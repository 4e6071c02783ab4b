package sweep

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The shipped default (deploy/rules/spike-default.yaml), on four judged
// weeks of a site with a strong daily and weekly rhythm and holidays that
// halve, double or cut traffic to a third: the rhythm, the holidays at
// half and double, and the recovery after an outage fire nothing. spike-default fires once
// at each surge of at least 4 × normal and 70 views and resolves once,
// 30 h after the hour is back; spike-huge fires once more when a surge
// reaches 12 × normal, and alone at a small page's surge of 50 to 69 views
// (below spike-default's min_count). went-quiet hears the outage and the
// holiday at a third, each once, and resolves each.
func TestShippedSpikeDefaultOnSeasonalTraffic(t *testing.T) {
	rs, err := LoadRules(Config{RulesPath: "../../deploy/rules/spike-default.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[0].Name != "spike-default" || rs[1].Name != "spike-huge" || rs[2].Name != "went-quiet" {
		t.Fatalf("rules %d, want spike-default, spike-huge and went-quiet", len(rs))
	}
	spike := [2]time.Time{time.Date(2026, 4, 1, 3, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 4, 0, 0, 0, time.UTC)}
	drop := [2]time.Time{time.Date(2026, 3, 26, 13, 0, 0, 0, time.UTC), time.Date(2026, 3, 26, 17, 0, 0, 0, time.UTC)}
	// A surge of 5 × the night's normal: spike-default's alone.
	moderate := [2]time.Time{time.Date(2026, 3, 17, 2, 0, 0, 0, time.UTC), time.Date(2026, 3, 17, 3, 0, 0, 0, time.UTC)}
	// A small page (3 views an hour) getting 60 in an hour.
	small := [2]time.Time{time.Date(2026, 3, 24, 20, 0, 0, 0, time.UTC), time.Date(2026, 3, 24, 21, 0, 0, 0, time.UTC)}
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
			csv = addToRows(t, csv, moderate, 40) // about 10 a row at night, 120 an hour: 600 in the surge's hour
			csv += smallPage(small, 5)            // 5 a row in the surge's hour: 60
			var got []string
			for _, x := range backtestCSV(t, csv, since, rs...) {
				got = append(got, fmt.Sprintf("%s %s %s %s", x.Rule, x.Path, x.Event, x.CrossedAt.Format("01-02 15:04")))
				if x.Event != "fire" {
					continue
				}
				switch {
				case x.Why == nil:
					t.Errorf("%s: no why", x.Rule)
				case x.Rule == "went-quiet" && (x.Why.Direction != "down" || x.Why.Low <= float64(x.Count) || x.Why.Days < 7 || !x.Why.Weekly):
					t.Errorf("%s: why %+v, want a fall below the usual range of a normal that knows the week", x.Rule, x.Why)
				case x.Rule != "went-quiet" && x.Path == "/pricing" && (x.Why.Baseline < 80 || x.Why.Baseline > 200):
					t.Errorf("%s: why %+v, want the night's normal", x.Rule, x.Why)
				case x.Rule == "spike-default" && x.Why.Factor != 4, x.Rule == "spike-huge" && x.Why.Factor != 12:
					t.Errorf("%s: why %+v, want its own factor", x.Rule, x.Why)
				}
			}
			// spike-default fires once enough of a surge's rows are in the
			// hour: the moderate one's ninth (9 × 40 on top of about 120
			// is 4 × 120), the big one's second (one, 300 on top of about
			// 120, is short of 4 × 120); back once the hour holds few
			// enough of its rows to be under 2.4 × normal (the moderate
			// one's last four; the big one's none, from 04:55), resolved
			// 30 h later. spike-huge fires at the big surge's fifth row
			// (12 × about 120, 1,440) and at the small page's tenth (50
			// views, 12 × 3 being 36; spike-default needs 70), and sends
			// no resolve.
			// went-quiet hears the outage (03-26 13:00 to 17:00) after
			// its 2 h, and the day at a third (03-20), and says when
			// each is back in range.
			quiet := ""
			if tc.holidays != nil {
				quiet = " went-quiet /pricing fire 03-20 06:00 went-quiet /pricing resolve 03-21 01:00"
			}
			want := "[spike-default /pricing fire 03-17 02:40" +
				" spike-default /pricing resolve 03-18 09:35" + quiet +
				" spike-huge /small fire 03-24 20:45" +
				" went-quiet /pricing fire 03-26 15:40 went-quiet /pricing resolve 03-26 18:40" +
				" spike-default /pricing fire 04-01 03:05" +
				" spike-huge /pricing fire 04-01 03:20" +
				" spike-default /pricing resolve 04-02 10:55]"
			if fmt.Sprint(got) != want {
				t.Errorf("crossings\n%v\nwant\n%s", got, want)
			}
		})
	}
}

// addToRows adds n to the count of every /pricing row in [span[0],
// span[1]).
func addToRows(t *testing.T, csv string, span [2]time.Time, n int) string {
	t.Helper()
	lines := strings.Split(csv, "\n")
	for i, l := range lines {
		f := strings.Split(l, ",")
		if len(f) != 4 || f[2] != "/pricing" {
			continue
		}
		at, err := time.Parse(time.RFC3339, f[0])
		if err != nil || at.Before(span[0]) || !at.Before(span[1]) {
			continue
		}
		c, err := strconv.Atoi(f[3])
		if err != nil {
			t.Fatal(err)
		}
		f[3] = strconv.Itoa(c + n)
		lines[i] = strings.Join(f, ",")
	}
	return strings.Join(lines, "\n")
}

// smallPage is the rows of /small on shop.example over the same five weeks
// as seasonal: one view every 20 minutes (3 an hour, day and night), and
// per5 a row within span.
func smallPage(span [2]time.Time, per5 int) string {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	var b strings.Builder
	for i := 0; i < 35*288; i++ {
		t := start.Add(time.Duration(i) * 5 * time.Minute)
		v := 0
		if i%4 == 0 {
			v = 1
		}
		if !t.Before(span[0]) && t.Before(span[1]) {
			v = per5
		}
		fmt.Fprintf(&b, "%s,shop.example,/small,%d\n", t.Format(time.RFC3339), v)
	}
	return b.String()
}
