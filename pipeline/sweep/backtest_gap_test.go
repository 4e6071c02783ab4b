package sweep

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/internal/testenv"
)

// gapCSV is 10 days of a page at 120 views an hour (a row of 10 every 5
// minutes, or every 30 minutes a row of 60), with 4 hours on the 10th day
// given as rows of 0 (zeros), or left out of the file (a collector that
// stopped, an export with a hole).
func gapCSV(every time.Duration, zeros bool) (string, time.Time, time.Time) {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	gapFrom, gapTo := start.Add(9*24*time.Hour+10*time.Hour), start.Add(9*24*time.Hour+14*time.Hour)
	var b strings.Builder
	b.WriteString("timestamp,site,path,count\n")
	per := int(120 * every / time.Hour)
	for at := start; at.Before(start.Add(10 * 24 * time.Hour)); at = at.Add(every) {
		n := per
		if !at.Before(gapFrom) && at.Before(gapTo) {
			if !zeros {
				continue
			}
			n = 0
		}
		fmt.Fprintf(&b, "%s,example.com,/checkout,%d\n", at.Format(time.RFC3339), n)
	}
	return b.String(), start.Add(8 * 24 * time.Hour), gapFrom
}

// A backtest holds drops where its data has a hole, as a sweep holds them
// while a site's data is late: rows of 0 say the page had no views, and
// the 4 hours are a drop; no rows say nothing was counted, and they are
// no drop but one "no data" message and its resolve, for counts per 5
// minutes and per 30 minutes alike.
func TestBacktestHoldsDropsOverAHoleInItsData(t *testing.T) {
	for _, every := range []time.Duration{5 * time.Minute, 30 * time.Minute} {
		t.Run(every.String(), func(t *testing.T) {
			csv, since, gapFrom := gapCSV(every, true)
			xs := backtestCSV(t, csv, since, unusualBoth())
			if got := eventsOf(xs); got != "fire down, resolve down" {
				t.Fatalf("rows of 0 for 4 hours: %s, want a drop and its resolve", got)
			}
			if at := xs[0].CrossedAt; at.Before(gapFrom.Add(2*time.Hour)) || at.After(gapFrom.Add(3*time.Hour)) {
				t.Errorf("the drop was heard at %s, want down_for (2h) after %s", at, gapFrom)
			}

			csv, since, _ = gapCSV(every, false)
			xs = backtestCSV(t, csv, since, unusualBoth())
			if got := eventsOf(xs); got != "fire no_data, resolve no_data" {
				t.Fatalf("no rows for 4 hours: %s, want \"no data\" and its resolve, and no drop", got)
			}
			// Late after data_late_after (10m) or twice the rows'
			// spacing, whichever is longer, from the end of the last
			// row's minute; back a minute after the first row again.
			last := gapFrom.Add(-every)
			wantFire := last.Add(time.Minute + max(10*time.Minute, 2*every) + time.Minute)
			wantBack := gapFrom.Add(4*time.Hour + time.Minute)
			if !xs[0].CrossedAt.Equal(wantFire) || !xs[0].Why.Since.Equal(last) || !xs[1].CrossedAt.Equal(wantBack) {
				t.Errorf("no data at %s since %s, back at %s; want at %s since %s, back at %s",
					xs[0].CrossedAt, xs[0].Why.Since, xs[1].CrossedAt, wantFire, last, wantBack)
			}
			if xs[0].Site != "example.com" || xs[0].Path != "" || xs[1].Key != xs[0].Key+".resolved" {
				t.Errorf("no data %+v and its resolve %+v: want the site's episode", xs[0], xs[1])
			}
		})
	}
}

func eventsOf(xs []crossing.Crossing) string {
	var out []string
	for _, x := range xs {
		what := x.Why.Direction
		if x.Why.SiteWide() {
			what = x.Why.Kind
		}
		out = append(out, x.Event+" "+what)
	}
	return strings.Join(out, ", ")
}

// sparseCSV is 14 days of a site's views per minute, a row for each
// minute with views: /docs at perHour(t) views an hour (Poisson, fixed
// seed) and, if busy, / at 600 an hour; no rows at all in [stopFrom,
// stopTo) (the tailer stopped).
func sparseCSV(perHour func(time.Time) float64, busy bool, stopFrom, stopTo time.Time) (string, time.Time) {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(7, 11))
	var b strings.Builder
	b.WriteString("timestamp,site,path,count\n")
	row := func(at time.Time, path string, rate float64) {
		if n := poisson(rng, rate/60); n > 0 && (at.Before(stopFrom) || !at.Before(stopTo)) {
			fmt.Fprintf(&b, "%s,example.com,%s,%d\n", at.Format(time.RFC3339), path, n)
		}
	}
	for at := start; at.Before(start.Add(14 * 24 * time.Hour)); at = at.Add(time.Minute) {
		row(at, "/docs", perHour(at))
		if busy {
			row(at, "/", 600)
		}
	}
	return b.String(), start.Add(7 * 24 * time.Hour)
}

func poisson(rng *rand.Rand, mean float64) int {
	n, p, l := 0, 1.0, math.Exp(-mean)
	for {
		p *= rng.Float64()
		if p <= l {
			return n
		}
		n++
	}
}

// A blog by day and night (4 views an hour from 8 to 20, one every two
// hours at night) has gaps between its views of up to hours: a backtest
// does not take them for its data stopping, as a sweep does not
// (freshness), but 8 hours without a row by day are "no data", once.
// Before, a site was late after twice its rows' median gap (13 minutes
// here): 87 "no data" messages in the week judged.
func TestBacktestSparseSiteIsNotLateBetweenItsViews(t *testing.T) {
	blog := func(t time.Time) float64 {
		if h := t.Hour(); h >= 8 && h < 20 {
			return 4
		}
		return 0.5
	}
	stop := time.Date(2026, 3, 13, 10, 0, 0, 0, time.UTC)
	csv, since := sparseCSV(blog, false, stop, stop.Add(8*time.Hour))
	xs := backtestCSV(t, csv, since, unusualBoth())
	if got := eventsOf(xs); got != "fire no_data, resolve no_data" {
		t.Fatalf("a sparse blog, its tailer stopped 8 hours one day: %s, want one \"no data\" and its resolve", got)
	}
	// At 4 an hour, no view for about 3 hours (ln(1000 × its some 50
	// minutes with views a day) / 4 an hour) happens once in a thousand
	// days; it was 104 minutes when one gap in a thousand was late.
	if late := xs[0].CrossedAt.Sub(xs[0].Why.Since); late < 150*time.Minute || late > 210*time.Minute {
		t.Errorf("no data %s after the last row, want about 3 hours", late)
	}
}

// A small site (10 views an hour at night, 120 at its busiest, a row for
// each minute with views) begins hundreds of silences a day, and one in
// a thousand of them is as long as a late site's was: its data was late
// 3 to 6 times in 5 weeks at night, each a "no data" and a "data again"
// to the rule's receivers. A silence must now be a chance of once in a
// thousand of the site's days: none is, on three draws.
func TestSmallSiteIsNotLateAtNight(t *testing.T) {
	rs, err := LoadRules(Config{RulesPath: "../../deploy/rules/spike-default.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	for seed := uint64(1); seed <= 3; seed++ {
		rng := rand.New(rand.NewPCG(seed, 5))
		var b strings.Builder
		b.WriteString("timestamp,site,path,count\n")
		for i := range 42 * 24 * 60 {
			at := start.Add(time.Duration(i) * time.Minute)
			h := float64(at.Hour()) + float64(at.Minute())/60
			if n := poisson(rng, (10+110*math.Max(0, math.Sin((h-6)/18*math.Pi)))/60); n > 0 {
				fmt.Fprintf(&b, "%s,small.example,/p,%d\n", at.Format(time.RFC3339), n)
			}
		}
		if got := eventsOf(backtestCSV(t, b.String(), start.Add(7*24*time.Hour), rs...)); got != "" {
			t.Errorf("draw %d, 5 weeks of a small site: %s, want nothing", seed, got)
		}
	}
}

// A page tried alone (the console's Try a rule) is late only when its
// site is: a quiet page of a busy site has gaps of an hour or two
// between its views while the site's other pages flow, and says no "no
// data"; when the page is all its site has and it stops, it does.
func TestBacktestPagesKnowsItsSiteFlows(t *testing.T) {
	quiet := func(time.Time) float64 { return 4 }
	only := func(_, path string, _ time.Time, _ uint64) bool { return path == "/docs" }
	rs := []rules.Rule{unusualBoth()}
	if err := rules.ValidateAll("rules", rs); err != nil {
		t.Fatal(err)
	}
	stop := time.Date(2026, 3, 13, 10, 0, 0, 0, time.UTC)
	tryDocs := func(t *testing.T, csv string, since time.Time) []crossing.Crossing {
		cf, err := ReadCounts(strings.NewReader(csv), "counts.csv")
		if err != nil {
			t.Fatal(err)
		}
		xs, err := BacktestPages(context.Background(), cf, only, rs, since, cf.Last.Add(time.Minute), testenv.Logger(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range xs {
			if x.Path == "/" {
				t.Errorf("a page keep turned away was judged: %+v", x)
			}
		}
		return xs
	}

	t.Run("the site flows", func(t *testing.T) {
		// Only /docs stops; / goes on at 600 an hour.
		csv, since := sparseCSV(quiet, false, stop, stop.Add(8*time.Hour))
		busy, _ := sparseCSV(func(time.Time) float64 { return 0 }, true, time.Time{}, time.Time{})
		xs := tryDocs(t, csv+strings.TrimPrefix(busy, "timestamp,site,path,count\n"), since)
		if got := eventsOf(xs); got != "" {
			t.Errorf("/docs tried alone on a site that flows: %q, want nothing", got)
		}
	})
	t.Run("the page is the site", func(t *testing.T) {
		csv, since := sparseCSV(quiet, false, stop, stop.Add(8*time.Hour))
		xs := tryDocs(t, csv, since)
		// The stop is one "no data" (about 3 hours after the last view:
		// ln(1000 × its some 90 minutes with views a day) / 4 an hour)
		// and its resolve. Gaps as long come by chance once in a
		// thousand days, as in a sweep.
		found, chance := false, 0
		for i := 0; i+1 < len(xs); i += 2 {
			fire, back := xs[i], xs[i+1]
			if fire.Event != "fire" || back.Event != "resolve" || !fire.Why.SiteWide() || back.Key != fire.Key+".resolved" {
				t.Fatalf("messages %s, want pairs of \"no data\" and its resolve", eventsOf(xs))
			}
			if fire.Why.Since.Before(stop.Add(-time.Hour)) || fire.Why.Since.After(stop) {
				chance++
				continue
			}
			found = true
			if late := fire.CrossedAt.Sub(fire.Why.Since); late < 150*time.Minute || late > 210*time.Minute {
				t.Errorf("no data %s after the last row, want about 3 hours", late)
			}
			if want := stop.Add(8*time.Hour + time.Minute); back.CrossedAt.Before(want) || back.CrossedAt.After(want.Add(time.Hour)) {
				t.Errorf("data again at %s, want a minute after the first view from %s", back.CrossedAt, stop.Add(8*time.Hour))
			}
		}
		if !found || chance > 1 || len(xs)%2 != 0 {
			t.Errorf("/docs alone on its site, stopped 8 hours: %s (%d by chance), want one \"no data\" over the stop and at most one by chance in a week", eventsOf(xs), chance)
		}
	})
}

// A page gone for good in its second week (renamed, deleted: its rows
// stop while its site's go on) is told gone quiet once, and its resolve
// says it has not come back (new_normal), read from a file as a user
// tries it. Before, it was told twice and "back to normal" twice: its
// normal followed it down within days, and in its fourth week, read from
// past weeks most of them before it stopped, heard it gone quiet again.
func TestBacktestPageGoneForGoodIsToldOnce(t *testing.T) {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	gone := start.Add(10*24*time.Hour + 12*time.Hour)
	rng := rand.New(rand.NewPCG(13, 17))
	var b strings.Builder
	b.WriteString("timestamp,site,path,count\n")
	for at := start; at.Before(start.Add(35 * 24 * time.Hour)); at = at.Add(10 * time.Minute) {
		fmt.Fprintf(&b, "%s,example.com,/,%d\n", at.Format(time.RFC3339), poisson(rng, 100))
		if at.Before(gone) {
			day := 0.2 + 0.8*math.Max(0, math.Sin(math.Pi*float64(at.Hour()-6)/14))
			fmt.Fprintf(&b, "%s,example.com,/old,%d\n", at.Format(time.RFC3339), poisson(rng, 300*day))
		}
	}
	xs := backtestCSV(t, b.String(), start.Add(24*time.Hour), unusualBoth())
	var old []crossing.Crossing
	for _, x := range xs {
		if x.Path == "/old" {
			old = append(old, x)
		}
	}
	if got := eventsOf(old); got != "fire down, resolve down" {
		for _, x := range old {
			t.Log(x.Event, x.CrossedAt, x.Why.NewNormal)
		}
		t.Fatalf("/old gone for good: %s, want one drop and one resolve", got)
	}
	if at := old[0].CrossedAt; at.Before(gone) || at.After(gone.Add(4*time.Hour)) {
		t.Errorf("the drop was heard at %s, want within hours of %s", at, gone)
	}
	if !old[1].Why.NewNormal || old[0].Why.NewNormal {
		t.Errorf("new_normal: fire %v, resolve %v; want the resolve's alone", old[0].Why.NewNormal, old[1].Why.NewNormal)
	}
}

// A spike rule looking down, which fires at the first sweep past its
// level, is held over a hole in its data too: not only while the site is
// late, but while its window still holds the hole's minutes, whose hits
// never came. Before, it fired "went quiet" a minute after the data
// came back (its hour then three quarters empty). (Rows every 30
// minutes are not asked: such a rule fires before the site is late, on
// a 1h window missing one row of two, which data_late_after, twice the
// rows' spacing, cannot tell from a drop.)
func TestBacktestSpikeDownIsNoDropAfterAHole(t *testing.T) {
	for _, every := range []time.Duration{time.Minute, 5 * time.Minute} {
		t.Run(every.String(), func(t *testing.T) {
			r := spikeRuleOf("quiet", rules.Spike{Factor: 4, MinCount: 20, Direction: rules.Down,
				Baseline: rules.Baseline{SameTime: &rules.SameTime{Days: 7}}})
			r.Site = "example.com"
			r.NotifyOn = []rules.Event{rules.EventFire, rules.EventResolve}
			csv, since, _ := gapCSV(every, false)
			xs := backtestCSV(t, csv, since, r)
			if got := eventsOf(xs); got != "fire no_data, resolve no_data" {
				t.Errorf("no rows for 4 hours: %s, want \"no data\" and its resolve, and no drop", got)
				for _, x := range xs {
					t.Log(x.Event, x.CrossedAt, x.Count, x.Threshold)
				}
			}
		})
	}
}
