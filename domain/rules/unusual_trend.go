package rules

import (
	"math"
	"time"
)

// A page's slow trend. The normal is the median of the same hour on the
// same weekday of past weeks; on a page growing 9 % a week that median
// sits 2½ weeks back, a quarter below the page as it is now, and the
// trend's spread reads as noise. So each weekly sample is carried
// forward by the page's trend, read once a day from its daily views.

// TrendDays is how many whole UTC days a page's trend is read from
// (TrendFrom): five weeks.
const TrendDays = 7 * trendWeeks

// trendWeeks is how many weeks' levels the trend is fitted to.
const trendWeeks = 5

// trendMinDay is the least a weekday's views must be, as the median
// over the weeks, for its days to tell the page's level: under it a
// day's Poisson noise alone is over a tenth of it.
const trendMinDay = 100

// maxTrend bounds the trend a week, either way: a slow trend is what it
// follows. Faster than this, a change is an event to be told (and the
// medians catch up with it in weeks), not a normal to follow.
var maxTrend = math.Log(1.2)

// Trend is what a page's sealed history says of it, read once a day:
// its slow trend (PageTrend), its level's growth a week on the log
// scale, OK when its daily views could tell it; and its own noise
// (PageNoise, unusual_noise.go), NoiseOK when its hours could tell it.
type Trend struct {
	Weekly  float64
	OK      bool
	Noise   float64
	NoiseOK bool
}

// scale is what a sample weeksBack weeks back is multiplied by to read
// as of now. The trend is fitted to trendWeeks weeks: a sample further
// back (a rule of more weeks) is carried as far as that, no further, so
// a page flat for months that rose lately is not read as one that rose
// all along.
func (t Trend) scale(weeksBack int) float64 {
	if !t.OK || weeksBack == 0 {
		return 1
	}
	return math.Exp(t.Weekly * float64(min(weeksBack, trendWeeks)))
}

// TrendFrom is the first of the TrendDays UTC days a window ending at
// end reads its page's trend from: they end three days before end's
// day, the newest day sealed in page_days at every moment of that day
// (a day is sealed a day and the lag tolerance after it ends: the day
// before yesterday only minutes after midnight, when the first sweep of
// the day reads the trends), so a sweep reads them from one table, over
// the pages above TrendFloor alone (a lag tolerance over a day leaves
// them unsealed: read from minutes then, as exact, and slower). The
// same for every window of a day: a sweep reads them once a day.
func TrendFrom(end time.Time) time.Time {
	return end.UTC().Truncate(24*time.Hour).AddDate(0, 0, -TrendDays-2)
}

// PageTrend is a page's trend from its views on the TrendDays UTC days
// from TrendFrom: days[0] the newest, days[i] i days before it, NaN
// where unknown (before the site's data began).
//
// Each week's level is the median, over its weekdays, of the day's
// views over that weekday's median across the weeks, so the week's
// rhythm cancels and a surge or a holiday moves one day of seven. The
// trend is the Theil–Sen slope of the weeks' log levels, the median of
// the slopes between every two, so one odd week (a week-long drop, the
// week before a launch) does not bend it. It is drawn towards 0 by how
// sure it is (shrink): the weeks' levels are as uncertain as their days
// vary. A week of level 0 (the page gone) is left out: a page that
// went quiet is a drop to be told, not a trend to follow.
func PageTrend(days []float64) Trend {
	if len(days) < TrendDays {
		return Trend{}
	}
	var ref [7]float64
	var buf [trendWeeks]float64
	for j := range 7 {
		xs := buf[:0]
		for w := range trendWeeks {
			if v := days[7*w+j]; !math.IsNaN(v) {
				xs = append(xs, v)
			}
		}
		if len(xs) >= 3 {
			if m := median(xs); m >= trendMinDay {
				ref[j] = m
			}
		}
	}
	var logLevel, spread [trendWeeks]float64
	var known [trendWeeks]bool
	for w := range trendWeeks {
		var ratios [7]float64
		n := 0
		for j := range 7 {
			if v := days[7*w+j]; ref[j] > 0 && !math.IsNaN(v) {
				ratios[n] = v / ref[j]
				n++
			}
		}
		if n >= 5 {
			if l := median(ratios[:n]); l > 0 {
				logLevel[w], known[w] = math.Log(l), true
				// The level's own uncertainty on the log scale: its days'
				// spread (1.4826 × MAD, relative) over √n, times the
				// median's 1.25.
				spread[w] = 1.4826 * mad(ratios[:n], l) / l * 1.2533 / math.Sqrt(float64(n))
			}
		}
	}
	var slopes []float64
	for a := range trendWeeks {
		for b := a + 1; b < trendWeeks; b++ {
			if known[a] && known[b] {
				// Week a is the later: the level's growth a week.
				slopes = append(slopes, (logLevel[a]-logLevel[b])/float64(b-a))
			}
		}
	}
	if len(slopes) < 6 { // 4 weeks of levels, at least
		return Trend{}
	}
	g := shrink(median(slopes), slopeError(spread, known))
	return Trend{Weekly: min(maxTrend, max(-maxTrend, g)), OK: true}
}

// DailyViews is days for PageTrend from a page's views per UTC day and
// the first moment its site has data, for the days from TrendFrom on:
// days[0] the newest.
func DailyViews(from, dataStart time.Time, views func(day time.Time) float64) []float64 {
	days := make([]float64, TrendDays)
	for i := range days {
		day := from.AddDate(0, 0, TrendDays-1-i)
		if day.Before(dataStart) {
			days[i] = math.NaN()
			continue
		}
		days[i] = views(day)
	}
	return days
}

// TrendFloor is the fewest views a page has over its TrendDays days for
// PageTrend to read a trend: each of the 5 weekdays it needs has a
// median of trendMinDay over 3 weeks or more, so 2 × trendMinDay at
// least. A sweep need not read the days of pages under it.
const TrendFloor = 5 * 2 * trendMinDay

// FollowsTrend reports whether r's normal is carried forward by its
// page's trend: an unusual rule counting views. Visitors are distinct
// per window and are not summed per day, so their normal is as read.
func FollowsTrend(r *Rule) bool { return r.Unusual != nil && r.Count != CountVisitors }

// slopeError is the standard error of a slope fitted to the known weeks'
// levels, each as uncertain as the median of their spreads: a line's
// σ / √Σ(x − x̄)² (Theil–Sen's is about the same).
func slopeError(spread [trendWeeks]float64, known [trendWeeks]bool) float64 {
	var sp []float64
	var sum float64
	for w := range trendWeeks {
		if known[w] {
			sp = append(sp, spread[w])
			sum += float64(w)
		}
	}
	mean := sum / float64(len(sp))
	var ss float64
	for w := range trendWeeks {
		if known[w] {
			ss += (float64(w) - mean) * (float64(w) - mean)
		}
	}
	return median(sp) / math.Sqrt(ss)
}

// shrink is a slope g of standard error se drawn towards 0 by
// g² / (g² + se²): a trend well above its noise is kept, one within it
// mostly dropped. On a flat page whose days vary by 25 %, 5 weeks'
// levels alone read slopes of 1.8 % a week on average either way (1.1 %
// shrunk), which carried 4 weeks move its normal by 7 % (4 %): a trend
// the data cannot tell is damped, as forecasters damp theirs.
func shrink(g, se float64) float64 {
	if g*g+se*se == 0 {
		return 0
	}
	return g * g * g / (g*g + se*se)
}
