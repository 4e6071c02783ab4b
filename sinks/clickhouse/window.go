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
// particular order: sealed days come from page_days (one row per page and
// day) and everything else from page_minutes, so a window of a month or
// of all time reads about as much as a day does.
//
// A day is counted from one table only: a start's days in
// [ceil(start), sealedTo) come from page_days, its minutes in
// [start, ceil(start)) and [sealedTo, End) from page_minutes, where ceil is
// the next UTC midnight and sealedTo the UTC midnight of SealedBefore (or
// of End if earlier). Both tables are read with FINAL, exact before and
// after merges (see sweepqueries.go).
//
// The page_days half changes only when a day is sealed, so it is kept
// (sealedcache.go) and read again once some sweeper sealed a day: a
// steady sweep reads only the minutes since sealedTo.
func (cs Counts) WindowCounts(ctx context.Context, q traffic.WindowQuery) ([]traffic.PageCount, error) {
	if q.Measure == traffic.Visitors {
		return cs.visitorCounts(ctx, q)
	}
	p, err := planWindows(q)
	if err != nil {
		return nil, err
	}
	var days *sealedPages
	if p.anySealed() {
		// A query asked once keeps nothing; if it reads no minute, the
		// pages under its floor need not be read.
		cut := q.Once && p.allSealed() && q.Floor > 0
		if days, err = cs.sealedPages(ctx, p, q.Sites, !q.Once, cut, q.Floor); err != nil {
			return nil, err
		}
	}
	var (
		out     []traffic.PageCount
		n       = len(p.starts)
		sum     = make([]uint64, n)
		backing []uint64 // the kept counts, allocated a block at a time
		seen    = make([]bool, days.len())
	)
	// keep adds a page whose counts are sum if one is above the floor.
	keep := func(site, path string) {
		if slices.Max(sum) <= q.Floor {
			return
		}
		if len(backing) < n {
			backing = make([]uint64, n*1024)
		}
		c := backing[:n:n]
		backing = backing[n:]
		copy(c, sum)
		if len(out) == cap(out) {
			// Doubling: append grows a large slice by a quarter, which
			// at 100k rows copied it some 40 times, a tenth of a steady
			// sweep's Go.
			out = slices.Grow(out, max(1024, len(out)))
		}
		out = append(out, traffic.PageCount{Site: site, Path: path, Counts: c})
	}
	if sql, args, ok := windowMinutesSQL(p, q.Sites); ok {
		err := cs.scanCounts(ctx, sql, args, n, func(site, path string, live []uint64) {
			copy(sum, live)
			if i, ok := days.find(site, path); ok {
				seen[i] = true
				for j, v := range days.counts(i) {
					sum[j] += v
				}
			}
			keep(site, path)
		})
		if err != nil {
			return nil, fmt.Errorf("window counts of %d starts to %d: %w", len(q.Starts), q.End.Unix(), err)
		}
	}
	for i, s := range seen {
		if !s { // no minute since the seals: its days alone
			copy(sum, days.counts(i))
			keep(days.sites[i], days.paths[i])
		}
	}
	return out, nil
}

// scanCounts runs one of the window statements and calls fn with each
// page's n counts, in a slice fn must copy from.
func (cs Counts) scanCounts(ctx context.Context, sql string, args []any, n int, fn func(site, path string, counts []uint64)) error {
	rows, err := cs.c.conn.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var (
		site, path string
		counts     = make([]uint64, n)
		dest       = make([]any, 2+n)
	)
	dest[0], dest[1] = &site, &path
	for i := range counts {
		dest[2+i] = &counts[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		fn(site, path, counts)
	}
	return rows.Err()
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

// anySealed reports whether some start reads page_days.
func (p windowPlan) anySealed() bool {
	return slices.ContainsFunc(p.starts, func(s startPlan) bool { return s.sealed })
}

// sealedKey names what the page_days half of a plan reads: the sealed
// boundary and each start's first sealed day (or none), over some sites.
func (p windowPlan) sealedKey(sites []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d|", p.sealedTo)
	for _, s := range p.starts {
		if s.sealed {
			fmt.Fprintf(&b, "%d,", s.from)
		} else {
			b.WriteString("-,")
		}
	}
	for _, site := range sites {
		fmt.Fprintf(&b, "|%q", site)
	}
	return b.String()
}

// windowDaysSQL renders queryWindowDays for a plan that reads page_days:
// one column per start. Every value is bound, in the order the ? appear.
// With having, only the pages whose earliest start counts more than
// floor are returned: for a plan reading no minute (allSealed), they
// are all the pages over the floor.
func windowDaysSQL(p windowPlan, sites []string, having bool, floor uint64) (string, []any) {
	var (
		cols []string
		args []any
	)
	from := p.sealedTo
	for i, s := range p.starts {
		if !s.sealed {
			cols = append(cols, fmt.Sprintf("toUInt64(0) AS n%d", i))
			continue
		}
		cols = append(cols, fmt.Sprintf("sumIf(hits, day >= toDate(toDateTime(?), 'UTC')) AS n%d", i))
		args = append(args, s.from)
		from = min(from, s.from)
	}
	args = append(args, from, p.sealedTo, len(sites) == 0, siteSet(sites))
	var cond string
	if earliest := p.earliestSealed(); having && earliest >= 0 {
		cond = fmt.Sprintf("\nHAVING n%d > ?", earliest)
		args = append(args, floor)
	}
	return fmt.Sprintf(queryWindowDays, strings.Join(cols, ",\n    "), cond), args
}

// earliestSealed is the start reading the most of page_days (-1: none).
func (p windowPlan) earliestSealed() int {
	i := -1
	for j, s := range p.starts {
		if s.sealed && (i < 0 || s.from < p.starts[i].from) {
			i = j
		}
	}
	return i
}

// allSealed reports whether every start reads page_days alone.
func (p windowPlan) allSealed() bool {
	return !slices.ContainsFunc(p.starts, func(s startPlan) bool { return len(s.live) > 0 })
}

// windowMinutesSQL renders queryWindowMinutes for a plan: one column per
// start, and the minute ranges any start needs; false when no start reads
// a minute. Every value is bound, in the order the ? appear.
func windowMinutesSQL(p windowPlan, sites []string) (string, []any, bool) {
	var (
		cols, ranges       []string
		colArgs, rangeArgs []any
		spans              []timeSpan // every start's minute ranges
	)
	const between = "minute >= toDateTime(?) AND minute < toDateTime(?)"
	for i, s := range p.starts {
		if len(s.live) == 0 {
			cols = append(cols, fmt.Sprintf("toUInt64(0) AS n%d", i))
			continue
		}
		var conds []string
		for _, r := range mergeSpans(s.live) {
			conds = append(conds, "("+between+")")
			colArgs = append(colArgs, r.from, r.to)
		}
		cols = append(cols, fmt.Sprintf("sumIf(hits, %s) AS n%d", strings.Join(conds, " OR "), i))
		spans = append(spans, s.live...)
	}
	if len(spans) == 0 {
		return "", nil, false
	}
	from := p.end
	for _, r := range mergeSpans(spans) {
		ranges = append(ranges, "("+between+")")
		rangeArgs = append(rangeArgs, r.from, r.to)
		from = min(from, r.from)
	}
	args := slices.Concat(colArgs, []any{from, p.end, len(sites) == 0, siteSet(sites)}, rangeArgs)
	return fmt.Sprintf(queryWindowMinutes, strings.Join(cols, ",\n    "), strings.Join(ranges, " OR ")), args, true
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
