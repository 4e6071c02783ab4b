package sweep

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
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
