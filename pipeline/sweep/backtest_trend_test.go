package sweep

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"testing"
	"time"
)

// trendCSV is 8 weeks of one page's views every 5 minutes from Monday 2
// March 2026: a day's rhythm peaking at peak an hour at 15:00, weekends
// at 60 %, its level times growth each week, and times change(t).
func trendCSV(seed uint64, peak, growth float64, change func(time.Time) float64) (string, time.Time) {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(seed, 7))
	var b strings.Builder
	b.WriteString("timestamp,site,path,count\n")
	for at := start; at.Before(start.Add(8 * 7 * 24 * time.Hour)); at = at.Add(5 * time.Minute) {
		h := float64(at.Hour()) + float64(at.Minute())/60
		mu := peak * (0.1 + 0.9*math.Max(0, math.Sin((h-6)/18*math.Pi)))
		if wd := at.Weekday(); wd == time.Saturday || wd == time.Sunday {
			mu *= 0.6
		}
		mu *= math.Pow(growth, at.Sub(start).Hours()/(7*24)) * change(at)
		if n := poisson(rng, mu/12); n > 0 {
			fmt.Fprintf(&b, "%s,example.com,/page,%d\n", at.Format(time.RFC3339), n)
		}
	}
	return b.String(), start
}

// between is change: times x in [from, to), else 1.
func between(from, to time.Time, x float64) func(time.Time) float64 {
	return func(t time.Time) float64 {
		if !t.Before(from) && t.Before(to) {
			return x
		}
		return 1
	}
}

// A page whose level grows 9 % a week (doubling in 8) has a normal that
// follows it: the median of 4 weeks' samples alone lags a quarter behind,
// and reads the trend's spread as noise. A day at 30 % of its normal is
// heard at 02:55 (at 10:00 with the normal as read), and nothing else
// is said of the page. A page whose views fall
// to a quarter for six days, a drop the trend does not follow, is told
// once and is back only when its views are.
func TestBacktestNormalFollowsATrendNotADrop(t *testing.T) {
	rs, err := LoadRules(Config{RulesPath: "../../deploy/rules/spike-default.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 4, 15, 0, 0, 0, 0, time.UTC) // a Wednesday of week 7
	for _, c := range []struct {
		name   string
		growth float64
		change func(time.Time) float64
		want   string
	}{
		{"growing 9 % a week, a day at 30 %", 1.09, between(day, day.AddDate(0, 0, 1), 0.3),
			"fire down 04-15 02:55|resolve down 04-16 01:00"},
		{"steady, six days at 25 %", 1, between(day, day.AddDate(0, 0, 6), 0.25),
			"fire down 04-15 09:00|resolve down 04-21 01:20"},
	} {
		t.Run(c.name, func(t *testing.T) {
			csv, start := trendCSV(3, 600, c.growth, c.change)
			var got []string
			for _, x := range backtestCSV(t, csv, start.Add(14*24*time.Hour), rs[0]) {
				if x.Why.Kind == crossing.KindNoData {
					continue // its nights at a quarter have minutes without views
				}
				got = append(got, fmt.Sprintf("%s %s %s", x.Event, x.Why.Direction, x.CrossedAt.Format("01-02 15:04")))
			}
			if s := strings.Join(got, "|"); s != c.want {
				t.Errorf("got  %s\nwant %s", s, c.want)
			}
		})
	}
}
