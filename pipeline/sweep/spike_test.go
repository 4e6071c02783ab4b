package sweep

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/internal/testenv"
)

// seasonal writes five weeks of a page's views per 5 minutes from Monday
// 2026-03-02: a daily rhythm peaking at 14:00 UTC (about 120 views an
// hour at night, 1,300 at the peak), weekends at weekend × a weekday,
// whole days scaled by holidays, ±15% noise; spike adds views and drop
// scales them to 2% within their spans.
func seasonal(weekend float64, holidays map[string]float64, spike, drop [2]time.Time) (string, time.Time) {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	var b strings.Builder
	b.WriteString("timestamp,site,path,count\n")
	for i := 0; i < 35*288; i++ {
		t := start.Add(time.Duration(i) * 5 * time.Minute)
		h := float64(t.Hour()) + float64(t.Minute())/60
		v := 10 + 100*math.Exp(-((h-14)/3)*((h-14)/3))
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
	return b.String(), start
}

func backtestCSV(t *testing.T, csv string, since time.Time, rs ...rules.Rule) []crossing.Crossing {
	t.Helper()
	if err := rules.ValidateAll("rules", rs); err != nil {
		t.Fatal(err)
	}
	cf, err := ReadCounts(strings.NewReader(csv), "counts.csv")
	if err != nil {
		t.Fatal(err)
	}
	xs, err := Backtest(context.Background(), cf, rs, since, cf.Last.Add(time.Minute), testenv.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	return xs
}

func spikeRuleOf(name string, s rules.Spike) rules.Rule {
	return rules.Rule{Name: name, Match: rules.Match{Prefix: "/"}, Window: rules.ParseWindow("1h"), Spike: &s,
		Rearm:  rules.Rearm{Hysteresis: 0.5, Settle: 6 * time.Hour},
		Notify: rules.Notify{Recipients: []string{"ops@example.com"}}}
}

// On four weeks of a daily and weekly rhythm the spike rules fire exactly
// at the injected spike and drop, where a fixed threshold fires at every
// daily peak.
func TestSpikeRulesFireOnAnomaliesNotOnTheRhythm(t *testing.T) {
	spike := [2]time.Time{time.Date(2026, 4, 1, 3, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 4, 0, 0, 0, time.UTC)}
	drop := [2]time.Time{time.Date(2026, 4, 2, 13, 0, 0, 0, time.UTC), time.Date(2026, 4, 2, 17, 0, 0, 0, time.UTC)}
	csv, start := seasonal(0.85, nil, spike, drop)
	since := start.Add(7 * 24 * time.Hour)
	sameTime := rules.Baseline{SameTime: &rules.SameTime{Days: 7}}
	up := spikeRuleOf("up", rules.Spike{Factor: 4, MinCount: 60, Baseline: sameTime})
	down := spikeRuleOf("down", rules.Spike{Factor: 4, MinCount: 60, Direction: rules.Down, Baseline: sameTime})
	fixed := rules.Rule{Name: "fixed", Site: "shop.example", Path: "/pricing", Thresholds: rules.Thresholds{1000}, Window: rules.ParseWindow("1h"),
		Rearm: rules.Rearm{Hysteresis: 0.1}, Notify: rules.Notify{Recipients: []string{"ops@example.com"}}}

	xs := backtestCSV(t, csv, since, up, down, fixed)
	var got []string
	days := map[string]bool{}
	for _, x := range xs {
		if x.Rule == "fixed" {
			days[x.CrossedAt.Format(time.DateOnly)] = true
			continue
		}
		got = append(got, fmt.Sprintf("%s %s %s", x.Rule, x.Event, x.CrossedAt.Format("01-02 15")))
		if x.Why == nil || x.Why.Baseline == 0 || x.Why.Factor != 4 {
			t.Errorf("%s: why %+v", x.Key, x.Why)
		}
	}
	want := "[up fire 04-01 03 down fire 04-02 13]"
	if fmt.Sprint(got) != want {
		t.Errorf("spike rules fired %v, want %s", got, want)
	}
	// Every day's peak but the one the drop took away.
	if len(days) != 27 || days["2026-04-02"] {
		t.Errorf("the fixed threshold fired on %d of 28 days, want all but 04-02: %v", len(days), days)
	}
}

func TestReadCountsNamesTheBadLine(t *testing.T) {
	for _, tc := range []struct{ csv, want string }{
		{"timestamp,site,path,count\n2026-03-02T00:00:00Z,s,/p,x\n", "c.csv:2: count: want a whole number"},
		{"2026-03-02T00:00:00Z,1.5\n", "c.csv:1: count: want a whole number"},
		{"2026-03-02T00:00:00Z,-1\n", "c.csv:1: count: want a whole number"},
		{"2026-03-02T00:00:00Z,12,5\n", "c.csv:1: want 4 fields (timestamp,site,path,count) or 2 (timestamp,count), got 3"},
		{"2026/03/02 00:00:00,s,/p,1\n", "c.csv:1: timestamp: want RFC 3339"},
		{",5\n", "c.csv:1: timestamp: want RFC 3339"},
		{"2026-03-02 00:00:00 UTC,5\n", "c.csv:1: timestamp: want RFC 3339"},
		{"20150226214,5\n", "c.csv:1: timestamp: want RFC 3339"},
		{"timestamp,value\n\n\n2026-03-02 00:00:00,x\n", "c.csv:4: count: want a whole number"},
		{"timestamp,value\n2026/03/02 00:00:00,1\n", "c.csv:2: timestamp: want RFC 3339"},
		{"timestamp,site,path\n", "c.csv:1: header: no column of counts named count, value"},
		{"when,site,path,views\n", "c.csv:1: want a header naming a column of times"},
		{"2026-03-02T00:00:00Z,s,/p\n", "c.csv:1: want 4 fields (timestamp,site,path,count) or 2 (timestamp,count), got 3"},
		{"timestamp,value\n2026-03-02 00:00:00,1\n2026-03-02T00:05:00Z,s,/p,1\n", "c.csv:3: want 2 fields like the first line, got 4"},
		{"2026-03-02T00:00:00Z,s,p,1\n", "c.csv:1: path: must start with /"},
		{"timestamp,site,path,count\n", "c.csv: no counts"},
	} {
		if _, err := ReadCounts(strings.NewReader(tc.csv), "c.csv"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.csv, err, tc.want)
		}
	}
	cf, err := ReadCounts(strings.NewReader("2026-03-02T00:00:30Z,s,/p,1\n2026-03-02T00:00:10Z,s,/p,2\n2026-03-02T01:00:00+01:00,s,/q,0\n"), "c.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.rows) != 2 || cf.rows[0].hits != 3 || !cf.First.Equal(cf.Last) {
		t.Errorf("rows %+v first %v last %v", cf.rows, cf.First, cf.Last)
	}
}

// A file of one series, as most exports and NAB's files are written
// (timestamp,value; times without a zone, read as UTC), is the page / of
// a site named after the file.
func TestReadCountsOfOneSeries(t *testing.T) {
	cf, err := ReadCounts(strings.NewReader("timestamp,value\n2015-02-26 21:42:53,104.0\n2015-02-26T21:47:53,0\n2015-02-26 21:52,7\n"), "data/Twitter_volume_AAPL.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []countRow{
		{site: "Twitter_volume_AAPL", path: "/", minute: time.Date(2015, 2, 26, 21, 42, 0, 0, time.UTC), hits: 104},
		{site: "Twitter_volume_AAPL", path: "/", minute: time.Date(2015, 2, 26, 21, 47, 0, 0, time.UTC), hits: 0},
		{site: "Twitter_volume_AAPL", path: "/", minute: time.Date(2015, 2, 26, 21, 52, 0, 0, time.UTC), hits: 7},
	}
	if fmt.Sprint(cf.rows) != fmt.Sprint(want) {
		t.Errorf("rows %v, want %v", cf.rows, want)
	}
}
