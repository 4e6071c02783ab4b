package clickhouse

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// WindowCounts returns the pages with a count above q.Floor, in no
// particular order, in one statement: sealed days come from page_days
// (one row per page and day) and everything else from page_minutes, so a
// window of a month or of all time reads about as much as a day does.
//
// A day is counted from one table only: a start's days in
// [ceil(start), sealedTo) come from page_days, its minutes in
// [start, ceil(start)) and [sealedTo, End) from page_minutes, where ceil is
// the next UTC midnight and sealedTo the UTC midnight of SealedBefore (or
// of End if earlier). Both tables are read with FINAL, exact before and
// after merges (see sweepqueries.go).
func (cs Counts) WindowCounts(ctx context.Context, q traffic.WindowQuery) ([]traffic.PageCount, error) {
	if q.Measure == traffic.Visitors {
		return cs.visitorCounts(ctx, q)
	}
	sql, args, err := windowCountsSQL(q)
	if err != nil {
		return nil, err
	}
	rows, err := cs.c.conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("window counts of %d starts to %d: %w", len(q.Starts), q.End.Unix(), err)
	}
	defer rows.Close()
	var (
		out        []traffic.PageCount
		site, path string
		n          = len(q.Starts)
		counts     = make([]uint64, n)
		dest       = make([]any, 2+n)
		backing    []uint64 // the rows' counts, allocated a block at a time
	)
	dest[0], dest[1] = &site, &path
	for i := range counts {
		dest[2+i] = &counts[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("window counts: %w", err)
		}
		if len(backing) < n {
			backing = make([]uint64, n*1024)
		}
		c := backing[:n:n]
		backing = backing[n:]
		copy(c, counts)
		if len(out) == cap(out) {
			// Doubling: append grows a large slice by a quarter, which
			// at 100k rows copied it some 40 times, a tenth of a steady
			// sweep's Go.
			out = slices.Grow(out, max(1024, len(out)))
		}
		out = append(out, traffic.PageCount{Site: site, Path: path, Counts: c})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("window counts: %w", err)
	}
	return out, nil
}

// secondsPerDay is a UTC day in Unix time, which has no leap seconds.
const secondsPerDay = 24 * 60 * 60

// floorDay and ceilDay round a non-negative Unix time to a UTC midnight.
func floorDay(unix int64) int64 { return unix - unix%secondsPerDay }
func ceilDay(unix int64) int64  { return floorDay(unix + secondsPerDay - 1) }

// timeSpan is [from, to) in Unix seconds.
type timeSpan struct{ from, to int64 }

// startPlan says where one window's hits are read from.
type startPlan struct {
	sealed bool       // days from sealedFrom to the plan's sealedTo come from page_days
	from   int64      // the first such day, a UTC midnight
	live   []timeSpan // minutes read from page_minutes
}

// windowPlan is a WindowQuery in Unix seconds, each start resolved.
type windowPlan struct {
	sealedTo int64 // UTC midnight: page_days is read for days before it
	end      int64
	starts   []startPlan
}

func planWindows(q traffic.WindowQuery) (windowPlan, error) {
	if len(q.Starts) == 0 {
		return windowPlan{}, errors.New("window counts: no window starts")
	}
	p := windowPlan{end: q.End.Unix()}
	if !q.SealedBefore.IsZero() {
		p.sealedTo = floorDay(min(q.SealedBefore.Unix(), p.end))
	}
	for _, t := range q.Starts {
		var s int64 // all time; nothing is older than 1970
		if !t.IsZero() {
			s = max(t.Unix(), 0)
		}
		var sp startPlan
		switch {
		case s >= p.end:
			// An empty window.
		case s >= p.sealedTo:
			sp.live = []timeSpan{{s, p.end}}
		default:
			// The partial UTC day the window starts in, if any, is not
			// in page_days for this window: it reads those minutes.
			if c := ceilDay(s); c > s {
				sp.live = append(sp.live, timeSpan{s, c})
			}
			if c := ceilDay(s); c < p.sealedTo {
				sp.sealed, sp.from = true, c
			}
			if p.sealedTo < p.end {
				sp.live = append(sp.live, timeSpan{p.sealedTo, p.end})
			}
		}
		p.starts = append(p.starts, sp)
	}
	return p, nil
}

// windowCountsSQL renders queryWindowCounts for a query: one column per
// start in each branch, and the minute ranges any start needs. Every value
// is bound, in the order the ? appear.
func windowCountsSQL(q traffic.WindowQuery) (string, []any, error) {
	p, err := planWindows(q)
	if err != nil {
		return "", nil, err
	}
	var (
		sums, names, sealedCols, liveCols, ranges []string
		sealedArgs, liveArgs, rangeArgs           []any
		spans                                     []timeSpan // every start's minute ranges
	)
	sealedFrom, liveFrom := p.sealedTo, p.end
	const between = "minute >= toDateTime(?) AND minute < toDateTime(?)"
	for i, s := range p.starts {
		sums = append(sums, fmt.Sprintf("sum(c%d) AS n%d", i, i))
		names = append(names, fmt.Sprintf("n%d", i))
		if s.sealed {
			sealedCols = append(sealedCols, fmt.Sprintf("sumIf(hits, day >= toDate(toDateTime(?), 'UTC')) AS c%d", i))
			sealedArgs = append(sealedArgs, s.from)
			sealedFrom = min(sealedFrom, s.from)
		} else {
			sealedCols = append(sealedCols, fmt.Sprintf("sumIf(hits, 0) AS c%d", i))
		}
		if len(s.live) == 0 {
			liveCols = append(liveCols, fmt.Sprintf("sumIf(hits, 0) AS c%d", i))
			continue
		}
		var conds []string
		for _, r := range mergeSpans(s.live) {
			conds = append(conds, "("+between+")")
			liveArgs = append(liveArgs, r.from, r.to)
		}
		liveCols = append(liveCols, fmt.Sprintf("sumIf(hits, %s) AS c%d", strings.Join(conds, " OR "), i))
		spans = append(spans, s.live...)
	}
	for _, r := range mergeSpans(spans) {
		ranges = append(ranges, "("+between+")")
		rangeArgs = append(rangeArgs, r.from, r.to)
		liveFrom = min(liveFrom, r.from)
	}
	if len(ranges) == 0 {
		ranges = []string{"0"}
	}
	all, sites := len(q.Sites) == 0, siteSet(q.Sites)
	args := slices.Concat(sealedArgs, []any{sealedFrom, p.sealedTo, all, sites},
		liveArgs, []any{liveFrom, p.end, all, sites}, rangeArgs, []any{q.Floor})
	sql := fmt.Sprintf(queryWindowCounts, strings.Join(sums, ", "), strings.Join(sealedCols, ",\n            "),
		strings.Join(liveCols, ",\n            "), strings.Join(ranges, " OR "), strings.Join(names, ", "))
	return sql, args, nil
}

// mergeSpans returns the union of spans as disjoint spans, in order.
func mergeSpans(spans []timeSpan) []timeSpan {
	sorted := slices.SortedFunc(slices.Values(spans), func(a, b timeSpan) int { return cmp.Compare(a.from, b.from) })
	var out []timeSpan
	for _, s := range sorted {
		if n := len(out); n > 0 && s.from <= out[n-1].to {
			out[n-1].to = max(out[n-1].to, s.to)
			continue
		}
		out = append(out, s)
	}
	return out
}

// siteSet binds as the tuple after IN. ClickHouse has no empty tuple, so
// no sites binds one empty name, which the statements never reach: they
// test `? OR site IN ?` with the first ? true.
func siteSet(sites []string) ch.GroupSet {
	if len(sites) == 0 {
		return ch.GroupSet{Value: []any{""}}
	}
	v := make([]any, len(sites))
	for i, s := range sites {
		v[i] = s
	}
	return ch.GroupSet{Value: v}
}

// ScanMinutes calls fn with each page's hits per minute in [q.From, q.To),
// ordered by site, path and minute, as the rows arrive: for the sweeper's
// catch-up and backtests, which replay minutes in order. Minutes without
// hits are absent. The server sorts the whole range before the first row,
// so callers should scan long spans in pieces. An error from fn stops the
// scan and is returned as is.
func (cs Counts) ScanMinutes(ctx context.Context, q traffic.MinuteScan, fn func(site, path string, minute time.Time, hits uint64) error) error {
	from, to := q.From.Unix(), q.To.Unix()
	// Cancelled when fn fails: closing the rows alone would read the
	// rest of the result first.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rows, err := cs.c.conn.Query(ctx, queryScanMinutes, len(q.Sites) == 0, siteSet(q.Sites), from, to)
	if err != nil {
		return fmt.Errorf("scan minutes [%d, %d): %w", from, to, err)
	}
	var (
		site, path string
		minute     time.Time
		hits       uint64
	)
	for rows.Next() {
		if err := rows.Scan(&site, &path, &minute, &hits); err != nil {
			rows.Close()
			return fmt.Errorf("scan minutes [%d, %d): %w", from, to, err)
		}
		if err := fn(site, path, minute, hits); err != nil {
			cancel()
			rows.Close()
			return err
		}
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return fmt.Errorf("scan minutes [%d, %d): %w", from, to, err)
	}
	return nil
}
