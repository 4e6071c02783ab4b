package sweep

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
)

// A page that rises 2.5 × for good in its 4th week, then surges 3 × on
// top of its new level 6 and 13 days later, read from a file with its
// trend and its own noise as a sweep reads them: the rise told, its new
// level two days later, and each surge told against that level. The
// rise bends the page's trend (read from its daily views) and its noise
// (from its hours): with the trend's days mostly after the rise, its
// weeks before were carried forward 20 % a week more, and its hours
// read as varying by half. Without a new level the two surges were not
// told at all (and the rise "back to normal" a week on, at 2.5 ×); with
// the level read but neither the trend nor the noise put back as they
// were at the rise, the page was told back at its old level the day
// after the first surge, and the second surge not at all.
func TestBacktestANewLevelHearsTheSurgesOnTopOfIt(t *testing.T) {
	start := time.Date(2026, 2, 2, 0, 0, 0, 0, time.UTC) // a Monday
	rise := start.Add(23*24*time.Hour + 12*time.Hour)    // its 4th Wednesday, noon
	surges := []time.Time{rise.Add(6*24*time.Hour - time.Hour), rise.Add(13*24*time.Hour + 2*time.Hour)}
	csv := risingPage(start, 49, 1, rise, 2.5, surges, 23)
	var up []crossing.Crossing
	for _, x := range backtestCSV(t, csv, start.Add(24*time.Hour), unusualBoth()) {
		if x.Path == "/up" {
			up = append(up, x)
		}
	}
	if got := eventsOf(up); got != "fire up, resolve up, fire up, resolve up, fire up, resolve up" {
		for _, x := range up {
			t.Log(x.Event, x.CrossedAt, x.Count, x.Why.Low, x.Why.High, x.Why.Raised, x.Why.NewNormal, x.Why.LevelEnded)
		}
		t.Fatalf("a rise and two surges on it: %s, want the rise, its new level, and each surge", got)
	}
	if lv := up[1].Why; !lv.NewNormal || lv.Raised < 2 || lv.Raised > 3.2 || up[1].CrossedAt.Sub(up[0].CrossedAt) > 50*time.Hour {
		t.Errorf("its new level: new_normal %v at %.2f ×, %s after the rise was told; want about 2.5 × two days after", lv.NewNormal, lv.Raised, up[1].CrossedAt.Sub(up[0].CrossedAt))
	}
	for i, s := range surges {
		f := up[2+2*i]
		if f.CrossedAt.Before(s) || f.CrossedAt.After(s.Add(3*time.Hour)) {
			t.Errorf("surge %d from %s told at %s", i+1, s, f.CrossedAt)
		}
		if f.Why.Raised <= 0 || f.Why.High <= 0 {
			t.Errorf("surge %d measured against %.0f–%.0f, raised %.2f: want its new level's range, and the level said", i+1, f.Why.Low, f.Why.High, f.Why.Raised)
		}
	}
}

// risingPage is a counts file of days of /up (3,000 views an hour at its
// busiest, 14:00; weekends at 70 %; days varying by 8 %; growing growth
// × a week), rising × factor for good at rise and 3 × on top for 3
// hours from each of surges; and a steady / beside it, its site's flow.
func risingPage(start time.Time, days int, growth float64, rise time.Time, factor float64, surges []time.Time, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 5))
	dayLevel := map[int]float64{}
	var b strings.Builder
	b.WriteString("timestamp,site,path,count\n")
	for at := start; at.Before(start.Add(time.Duration(days) * 24 * time.Hour)); at = at.Add(5 * time.Minute) {
		d := int(at.Sub(start).Hours() / 24)
		if _, ok := dayLevel[d]; !ok {
			dayLevel[d] = math.Exp(0.08 * rng.NormFloat64())
		}
		h := float64(at.Hour()) + float64(at.Minute())/60
		x := (h - 14) / 4.5
		rate := 3000 * (0.15 + 0.85*math.Exp(-x*x)) * dayLevel[d] * math.Pow(growth, at.Sub(start).Hours()/(24*7))
		if wd := at.Weekday(); wd == time.Saturday || wd == time.Sunday {
			rate *= 0.7
		}
		if !at.Before(rise) {
			rate *= factor
		}
		for _, s := range surges {
			if !at.Before(s) && at.Before(s.Add(3*time.Hour)) {
				rate *= 3
			}
		}
		// Poisson's noise as a normal's: poisson() saturates past 700.
		n := max(0, math.Round(rate/12+math.Sqrt(rate/12)*rng.NormFloat64()))
		fmt.Fprintf(&b, "%s,example.com,/up,%d\n", at.Format(time.RFC3339), int(n))
		fmt.Fprintf(&b, "%s,example.com,/,%d\n", at.Format(time.RFC3339), poisson(rng, 50))
	}
	return b.String()
}

// A page growing 15 % a week that doubles for good in its 4th week: the
// rise, its new level, and nothing more over the 9 weeks after. The
// level is read only while some of the normal's weeks lie before the
// rise: with its weeks all after it, the trend the rise bent was taken
// back out too, and a page that kept growing (whose trend its first 3
// weeks could not tell) was read against a normal pulled down below it,
// and told taking off again and a "new level" of 3.8 × 5 weeks later
// (a review found it; seeds 1 and 8 here).
func TestBacktestANewLevelOnAGrowingPage(t *testing.T) {
	start := time.Date(2026, 2, 2, 0, 0, 0, 0, time.UTC)
	rise := start.Add(23*24*time.Hour + 12*time.Hour)
	for _, seed := range []uint64{1, 3, 8} { // 1 and 8 told the second rise before
		var up []crossing.Crossing
		for _, x := range backtestCSV(t, risingPage(start, 90, 1.15, rise, 2, nil, seed), start.Add(24*time.Hour), unusualBoth()) {
			if x.Path == "/up" {
				up = append(up, x)
			}
		}
		if got := eventsOf(up); got != "fire up, resolve up" || !up[1].Why.NewNormal {
			for _, x := range up {
				t.Log(x.Event, x.CrossedAt, x.Count, x.Why.Low, x.Why.High, x.Why.Raised, x.Why.NewNormal, x.Why.LevelEnded)
			}
			t.Errorf("seed %d: a growing page rising 2 × for good: %s, want the rise and its new level", seed, got)
		}
	}
}
