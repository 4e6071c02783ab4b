package console

import (
	"context"
	"time"

	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/pipeline/sweep"
)

// tryPiece is how much of the stored minutes one query reads: ClickHouse
// sorts a scan's whole range before its first row, so a month (and the
// weeks of baseline before it) is read a day at a time.
const tryPiece = 24 * time.Hour

// pageKey is a page: its site and path.
type pageKey struct{ site, path string }

// boundedSource is the stored minutes as a backtest reads them, a day at
// a time, and (keep) the rows it judges: of at most max pages the rules
// match, those in chosen (the most viewed), then, while fewer than max
// are in, each page as it is first seen.
// Admitting a page only when first seen keeps every page's minutes
// whole: a page turned away is turned away for good. It also keeps each
// admitted page's views per hour in [from, to), for the charts.
type boundedSource struct {
	src      sweep.MinuteSource
	rules    []rules.Rule
	max      int
	in       map[pageKey]bool // admitted (true) or turned away (false)
	admitted int
	from, to time.Time
	hours    map[pageKey]map[time.Time]uint64
}

func newBoundedSource(src sweep.MinuteSource, rs []rules.Rule, chosen []pageKey, maxPages int, from, to time.Time) *boundedSource {
	b := &boundedSource{src: src, rules: rs, max: maxPages, in: map[pageKey]bool{}, from: from, to: to,
		hours: map[pageKey]map[time.Time]uint64{}}
	for _, k := range chosen {
		if b.admitted < maxPages && !b.in[k] {
			b.in[k] = true
			b.admitted++
		}
	}
	return b
}

// matched reports whether any of the rules watches a page: the others'
// minutes are none of the backtest's business and are not counted.
func (b *boundedSource) matched(site, path string) bool {
	for i := range b.rules {
		if b.rules[i].Matches(site, path) {
			return true
		}
	}
	return false
}

// left is how many matched pages were turned away.
func (b *boundedSource) left() int { return len(b.in) - b.admitted }

// ScanMinutes reads the stored minutes a day at a time and passes on
// every row: the backtest notes them all for when each site's data
// flowed, and judges only those keep admits.
func (b *boundedSource) ScanMinutes(ctx context.Context, q traffic.MinuteScan, fn func(site, path string, minute time.Time, hits uint64) error) error {
	for from := q.From; from.Before(q.To); from = from.Add(tryPiece) {
		piece := q
		piece.From, piece.To = from, minTime(from.Add(tryPiece), q.To)
		if err := b.src.ScanMinutes(ctx, piece, fn); err != nil {
			return err
		}
	}
	return nil
}

// keep admits a row of a page the rules match while fewer than max pages
// are in, and counts its views per hour for the charts.
func (b *boundedSource) keep(site, path string, minute time.Time, hits uint64) bool {
	k := pageKey{site, path}
	ok, seen := b.in[k]
	if !seen {
		if !b.matched(site, path) {
			return false
		}
		ok = b.admitted < b.max
		b.in[k] = ok
		if ok {
			b.admitted++
		}
	}
	if !ok {
		return false
	}
	if !minute.Before(b.from) && minute.Before(b.to) {
		h := b.hours[k]
		if h == nil {
			h = map[time.Time]uint64{}
			b.hours[k] = h
		}
		h[minute.Truncate(time.Hour)] += hits
	}
	return true
}

// series is the views per hour over [from, to) of the admitted pages a
// rule's crossing is of: one page, or for a sum rule (path empty in the
// key given) every admitted page it matches.
func (b *boundedSource) series(r *rules.Rule, site, path string, sum bool) []uint64 {
	n := int(b.to.Sub(b.from) / time.Hour)
	out := make([]uint64, n)
	add := func(h map[time.Time]uint64) {
		for t, v := range h {
			if i := int(t.Sub(b.from) / time.Hour); i >= 0 && i < n {
				out[i] += v
			}
		}
	}
	if !sum {
		add(b.hours[pageKey{site, path}])
		return out
	}
	for k, h := range b.hours {
		if r.Matches(k.site, k.path) {
			add(h)
		}
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
