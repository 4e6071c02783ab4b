package sweep

import (
	"fmt"
	"github.com/pagewatch/pagewatch/domain/rules"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The shipped default (deploy/rules/spike-default.yaml), one unusual
// rule, on four judged weeks of a site with a strong daily and weekly
// rhythm and holidays that halve, double or cut traffic to a third: the
// rhythm and the recovery after an outage fire nothing; the surges, the
// outage, the day at a third and the two days at half are each one
// episode, told once and resolved once.
func TestShippedSpikeDefaultOnSeasonalTraffic(t *testing.T) {
	rs, err := LoadRules(Config{RulesPath: "../../deploy/rules/spike-default.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Name != "unusual" || rs[0].Unusual == nil || rs[0].Unusual.Direction != rules.Both {
		t.Fatalf("rules %d, want one unusual rule looking both ways", len(rs))
	}
	spike := [2]time.Time{time.Date(2026, 4, 1, 3, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 4, 0, 0, 0, time.UTC)}
	drop := [2]time.Time{time.Date(2026, 3, 26, 13, 0, 0, 0, time.UTC), time.Date(2026, 3, 26, 17, 0, 0, 0, time.UTC)}
	// A surge of 5 × the night's normal.
	moderate := [2]time.Time{time.Date(2026, 3, 17, 2, 0, 0, 0, time.UTC), time.Date(2026, 3, 17, 3, 0, 0, 0, time.UTC)}
	// A small page (3 views an hour) getting 60 in an hour.
	small := [2]time.Time{time.Date(2026, 3, 24, 20, 0, 0, 0, time.UTC), time.Date(2026, 3, 24, 21, 0, 0, 0, time.UTC)}
	since := time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		weekend  float64
		holidays map[string]float64
		want     string
	}{
		// The moderate surge is heard at its first 10 minutes (the burst);
		// the small page's 60 views against 3 an hour; the outage after
		// down_for (2h), once, and back once its hour is in range; the
		// big surge at once, past 4 × the level it fired at already, so
		// not escalated (it was, 5 minutes on, until the steps a fire is
		// past were claimed with it). Each resolves once back in range
		// for settle (1h).
		{"weekends at 85%", 0.85, nil, "" +
			"/pricing fire up 03-17 02:05|/pricing resolve up 03-17 04:50|" +
			"/small fire up 03-24 20:20|/small resolve up 03-24 22:55|" +
			"/pricing fire down 03-26 15:30|/pricing resolve down 03-26 18:45|" +
			"/pricing fire up 04-01 03:00|/pricing resolve up 04-01 05:55"},
		// A B2B site: weekends at 30%; a Friday holiday at a third makes
		// three quiet days in a row, a sale day doubles traffic, and
		// Maundy Thursday and Good Friday are at half (the day after the
		// surge).
		// The weekends at 30% fire nothing; the day at a third is a
		// drop, the sale day (twice its Wednesday all day) a rise, and
		// the two days at half one drop, told in the small hours of the
		// first and back on the Saturday (a page whose hours vary by
		// Poisson's noise alone: its own noise says half is far). The
		// day at a third, in the page's third week, is told at 2:45, not
		// 6:00, since a weekday's noise then is read from its weekdays. The
		// big surge does not escalate here: the sale day is a surge the
		// page remembers, and its level is higher.
		{"weekends at 30%, holidays", 0.3, map[string]float64{"2026-03-20": 0.33, "2026-03-25": 2, "2026-04-02": 0.5, "2026-04-03": 0.5}, "" +
			"/pricing fire up 03-17 02:05|/pricing resolve up 03-17 04:50|" +
			"/pricing fire down 03-20 02:45|/pricing resolve down 03-21 01:00|" +
			"/small fire up 03-24 20:20|/small resolve up 03-24 22:55|" +
			"/pricing fire up 03-25 01:20|/pricing resolve up 03-26 03:05|" +
			"/pricing fire down 03-26 15:30|/pricing resolve down 03-26 18:45|" +
			"/pricing fire up 04-01 03:30|/pricing resolve up 04-01 05:55|" +
			// 03:00 before its night, which cannot tell a drop at its depth
			// from back, held it; 12:00 before a drop a day old was held
			// at hours whose range would hold it at its last day's level
			// (a Saturday's morning at 30 % holds a page at half).
			"/pricing fire down 04-02 04:45|/pricing resolve down 04-04 14:00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			csv, _ := seasonal(tc.weekend, tc.holidays, spike, drop)
			csv = addToRows(t, csv, moderate, 40) // about 10 a row at night, 120 an hour: 600 in the surge's hour
			csv += smallPage(small, 5)            // 5 a row in the surge's hour: 60
			var got []string
			for _, x := range backtestCSV(t, csv, since, rs...) {
				got = append(got, fmt.Sprintf("%s %s %s %s", x.Path, x.Event, x.Why.Direction, x.CrossedAt.Format("01-02 15:04")))
				if x.Event != "fire" {
					continue
				}
				w := x.Why
				switch {
				case w == nil:
					t.Errorf("%s: no why", x.Key)
				case w.High <= 0 || w.Low > w.High || w.Days < 7:
					t.Errorf("%s: why %+v, want a usual range from a week or more of history", x.Key, w)
				case w.Direction == "up" && float64(x.Count) <= w.High && x.Why.Burst == 0,
					w.Direction == "down" && float64(x.Count) >= w.Low:
					t.Errorf("%s: %d views is inside its usual range %v–%v", x.Key, x.Count, w.Low, w.High)
				case w.Burst > 0 && w.Direction == "up" && float64(w.BurstCount) <= w.BurstHigh,
					w.Burst > 0 && w.Direction == "down" && float64(w.BurstCount) >= w.BurstLow:
					t.Errorf("%s: fired on %d views in %s, inside its usual range %v–%v", x.Key, w.BurstCount, w.Burst, w.BurstLow, w.BurstHigh)
				}
			}
			if g := strings.Join(got, "|"); g != tc.want {
				t.Errorf("crossings\n%s\nwant\n%s", strings.ReplaceAll(g, "|", "\n"), strings.ReplaceAll(tc.want, "|", "\n"))
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
