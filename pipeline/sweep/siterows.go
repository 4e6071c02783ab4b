package sweep

import (
	"context"
	"maps"
	"math/bits"
	"slices"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

// siteRows notes each site's rows as a scan passes them on: where the
// site's data begins, for baselines, and the minutes it has rows in, for
// when it was late. It notes every row of the scan, but passes on for
// judging only those keep accepts (nil: all): a backtest of a few pages
// (the console's Try a rule) still knows when their site's data flowed,
// as a sweep does from the site's newest hit, and does not take a quiet
// page's gaps for a site that stopped sending.
type siteRows struct {
	src   MinuteSource
	keep  func(site, path string, minute time.Time, hits uint64) bool
	sites map[string]*siteData
	// clocksReach, when not 0, is how far back the rules that learn
	// clocks read (rules.ClocksReach): each site's views per hour are
	// noted for them.
	clocksReach time.Duration
}

// siteData is what a replay knows of a site's data: where it begins, the
// minutes it has rows in, their resolution, and when it was late.
type siteData struct {
	start   time.Time
	seen    minuteSet
	minutes []time.Time // settled: sorted, once each
	// step is the data's resolution: the 10th percentile of the gaps
	// between rows (5 minutes for counts per 5 minutes, 1 for a site's
	// own minutes however sparse).
	step time.Duration
	// lateAt[i] is when the gap after minutes[i] has made the site late:
	// a sweep after it finds it so. Zero when the next row comes first.
	lateAt []time.Time
	// lateIdx lists the i whose lateAt is set, in order: the late
	// stretches lateWithin searches.
	lateIdx []int
	// views is its views per hour, for the clocks its readers keep
	// (siteclocks.go).
	views siteViews
}

func newSiteRows(src MinuteSource, keep func(site, path string, minute time.Time, hits uint64) bool) *siteRows {
	return &siteRows{src: src, keep: keep, sites: map[string]*siteData{}}
}

func (f *siteRows) ScanMinutes(ctx context.Context, q traffic.MinuteScan, fn func(site, path string, minute time.Time, hits uint64) error) error {
	return f.src.ScanMinutes(ctx, q, func(site, path string, minute time.Time, hits uint64) error {
		d := f.sites[site]
		if d == nil {
			d = &siteData{start: minute, seen: minuteSet{}, views: siteViews{reach: f.clocksReach}}
			f.sites[site] = d
		}
		if minute.Before(d.start) {
			d.start = minute
		}
		d.seen.add(minute)
		if f.clocksReach > 0 {
			d.views.add(minute, hits)
		}
		if f.keep != nil && !f.keep(site, path, minute, hits) {
			return nil
		}
		return fn(site, path, minute, hits)
	})
}

// site is a site's data, or an empty one for a site without rows.
func (f *siteRows) site(name string) *siteData {
	if d := f.sites[name]; d != nil {
		return d
	}
	return &siteData{}
}

// settle lists each site's minutes and works out when each gap between
// them made the site late, up to now, by the site's rows from fitFrom
// on (its step and its hours: all of them if it has fewer than two).
func (f *siteRows) settle(now time.Time, lateAfter time.Duration, fitFrom time.Time) {
	for _, d := range f.sites {
		d.minutes = d.seen.sorted()
		d.seen = nil
		fit := d.minutes
		if i, _ := slices.BinarySearchFunc(d.minutes, fitFrom, time.Time.Compare); len(d.minutes)-i >= 2 {
			fit = d.minutes[i:]
		}
		d.step = time.Minute
		if len(fit) >= 2 {
			gaps := make([]time.Duration, len(fit)-1)
			for i := 1; i < len(fit); i++ {
				gaps[i-1] = fit[i].Sub(fit[i-1])
			}
			slices.Sort(gaps)
			d.step = gaps[len(gaps)/10]
		}
		d.lateAt = d.gapsLate(now, lateAfter, fit)
		d.lateIdx = d.lateIdx[:0]
		for i, at := range d.lateAt {
			if !at.IsZero() {
				d.lateIdx = append(d.lateIdx, i)
			}
		}
	}
}

// gapsLate is, for each gap after a row, when a sweep would have found
// the site late: as freshness does live, once no row for this long is a
// chance of once in a thousand days (hourHazards.bar) given how often the site has
// rows at those hours of the day, and never before lateAfter
// (data_late_after) nor two of its steps. A site with a row every minute
// is late after lateAfter; a blog with a view every 20 minutes by day
// and an hour by night is not late between them; a file of counts per
// 30 minutes is late after an hour without one. The rates come from
// fit, the replay's rows but for its warm-up (a sweep's come from the
// week before: sitehours.go).
func (d *siteData) gapsLate(now time.Time, lateAfter time.Duration, fit []time.Time) []time.Time {
	ms := d.minutes
	out := make([]time.Time, len(ms))
	if len(ms) == 0 {
		return out
	}
	hazard := d.hourlyHazard(fit)
	bar := hazard.bar(d.step)
	floor := max(lateAfter, 2*d.step)
	for i, m := range ms {
		newest := m.Add(time.Minute)
		next := now.Add(time.Minute) // none: the gap lasts to the end
		if i+1 < len(ms) {
			next = ms[i+1]
		}
		// Add up the empty steps after the row's own until the gap is
		// unlikely, or the next row comes.
		at, ok := hazard.quietPast(bar, m.Truncate(d.step).Add(d.step), d.step, next)
		if !ok {
			continue
		}
		if t := maxTime(at, newest.Add(floor)); t.Before(next) && !t.After(now) {
			out[i] = t
		}
	}
	return out
}

// hourlyHazard is the site's hazard per step at each UTC hour of the
// day (sitehours.go), from the share of the hour's steps that have a
// row on each day between the first of minutes and the last.
func (d *siteData) hourlyHazard(minutes []time.Time) hourHazards {
	type cell struct{ rows, slots int }
	first, last := minutes[0].Truncate(d.step), minutes[len(minutes)-1].Truncate(d.step)
	day0 := first.UTC().Truncate(24 * time.Hour)
	days := int(last.Sub(day0)/(24*time.Hour)) + 1
	cells := make([][24]cell, days)
	at := func(t time.Time) *cell {
		t = t.UTC()
		return &cells[int(t.Sub(day0)/(24*time.Hour))][t.Hour()]
	}
	for t := first; !t.After(last); t = t.Add(d.step) {
		at(t).slots++
	}
	prev := time.Time{}
	for _, m := range minutes {
		if s := m.Truncate(d.step); !s.Equal(prev) {
			at(s).rows++
			prev = s
		}
	}
	var shares [24][]float64
	for i := range cells {
		for h, c := range cells[i] {
			if c.slots > 0 {
				shares[h] = append(shares[h], float64(c.rows)/float64(c.slots))
			}
		}
	}
	return hazardsOf(&shares)
}

// lateWithin reports whether the site's data was late at any time in
// (from, to]: after minute i with rows, late from its lateAt to the
// next minute with rows, minutes[i+1] (late). The stretches are in
// order and apart: the first that ends after from is the only one to
// ask (a search, not a walk over a drop's hours of minutes, which was a
// third of a backtest's time).
func (d *siteData) lateWithin(from, to time.Time) bool {
	k, _ := slices.BinarySearchFunc(d.lateIdx, from, func(i int, t time.Time) int {
		if i+1 < len(d.minutes) && !d.minutes[i+1].After(t) {
			return -1 // ends at or before from
		}
		return 1
	})
	return k < len(d.lateIdx) && d.lateAt[d.lateIdx[k]].Before(to)
}

// minuteSet is a set of minutes, a bit each in blocks of 2^16 minutes
// (45 days, 8 KiB): a site's rows over weeks, whatever order a scan
// returns them in, in kilobytes rather than a time per row.
type minuteSet map[int64]*[1 << 10]uint64

const minuteBlockBits = 16

func (s minuteSet) add(t time.Time) {
	m := t.Unix() / 60
	blk := s[m>>minuteBlockBits]
	if blk == nil {
		blk = new([1 << 10]uint64)
		s[m>>minuteBlockBits] = blk
	}
	i := m & (1<<minuteBlockBits - 1)
	blk[i/64] |= 1 << (i % 64)
}

// sorted is the set's minutes in order.
func (s minuteSet) sorted() []time.Time {
	var out []time.Time
	for _, k := range slices.Sorted(maps.Keys(s)) {
		for w, word := range s[k] {
			for word != 0 {
				b := bits.TrailingZeros64(word)
				word &= word - 1
				m := k<<minuteBlockBits + int64(w*64+b)
				out = append(out, time.Unix(m*60, 0).UTC())
			}
		}
	}
	return out
}

// median sorts xs in place; 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
