package clickhouse

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

// HourCounts calls fn with the hits per whole UTC hour of the pages of
// q.Sites whose path is one of q.Paths (every path: q.AllPaths), in the hours starting in q.Spans,
// as the rows arrive, in no order (an hour may come in two rows). Hours
// without hits are absent. The hours of the UTC days before
// q.SealedBefore's day are read from page_hours, one row per page and
// hour; the others from page_minutes.
func (cs Counts) HourCounts(ctx context.Context, q traffic.HourQuery, fn func(site, path string, hour time.Time, hits uint64)) error {
	if len(q.Sites) == 0 || (len(q.Paths) == 0 && !q.AllPaths) || len(q.Spans) == 0 {
		return nil
	}
	sealed, live := splitHourSpans(q)
	for _, part := range []struct {
		query, column string
		spans         []timeSpan
	}{{queryHourCountsSealed, "hour", sealed}, {queryHourCounts, "minute", live}} {
		if len(part.spans) == 0 {
			continue
		}
		sql, args := hourCountsSQL(part.query, part.column, q, part.spans)
		if err := cs.hourRows(ctx, sql, args, fn); err != nil {
			return fmt.Errorf("hour counts of %d paths over %d spans: %w", len(q.Paths), len(part.spans), err)
		}
	}
	return nil
}

func (cs Counts) hourRows(ctx context.Context, sql string, args []any, fn func(site, path string, hour time.Time, hits uint64)) error {
	rows, err := cs.c.conn.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var (
		site, path string
		hour       uint32
		hits       uint64
	)
	for rows.Next() {
		if err := rows.Scan(&site, &path, &hour, &hits); err != nil {
			return err
		}
		fn(site, path, time.Unix(int64(hour), 0).UTC(), hits)
	}
	return rows.Err()
}

// splitHourSpans cuts q's spans at the UTC midnight of q.SealedBefore:
// the parts before it are read from page_hours, the rest from
// page_minutes.
func splitHourSpans(q traffic.HourQuery) (sealed, live []timeSpan) {
	spans := make([]timeSpan, len(q.Spans))
	for i, s := range q.Spans {
		spans[i] = timeSpan{s.From.Unix(), s.To.Unix()}
	}
	var cut int64 // nothing is sealed
	if !q.SealedBefore.IsZero() && q.SealedBefore.Unix() > 0 {
		cut = floorDay(q.SealedBefore.Unix())
	}
	for _, s := range mergeSpans(spans) {
		switch {
		case s.to <= cut:
			sealed = append(sealed, s)
		case s.from >= cut:
			live = append(live, s)
		default:
			sealed = append(sealed, timeSpan{s.from, cut})
			live = append(live, timeSpan{cut, s.to})
		}
	}
	return sealed, live
}

// hourCountsSQL renders query (queryHourCounts or queryHourCountsSealed)
// over spans of column.
func hourCountsSQL(query, column string, q traffic.HourQuery, spans []timeSpan) (string, []any) {
	paths := q.Paths
	if q.AllPaths || len(paths) == 0 {
		paths = []string{""} // IN needs a set; it is not read
	}
	args := []any{siteSet(q.Sites), q.AllPaths, siteSet(paths)}
	var conds []string
	for _, s := range spans {
		conds = append(conds, fmt.Sprintf("(%[1]s >= toDateTime(?) AND %[1]s < toDateTime(?))", column))
		args = append(args, s.from, s.to)
	}
	return fmt.Sprintf(query, strings.Join(conds, " OR ")), args
}

// DataStarts returns each site's first minute with hits.
func (cs Counts) DataStarts(ctx context.Context) (map[string]time.Time, error) {
	return cs.siteMinutes(ctx, "data starts", queryDataStarts)
}

// DataEnds returns each site's newest minute with hits in [since, until]
// (sites with none are missing).
func (cs Counts) DataEnds(ctx context.Context, since, until time.Time) (map[string]time.Time, error) {
	return cs.siteMinutes(ctx, "data ends", queryDataEnds, since.Unix(), until.Unix())
}

// SiteHours returns, per site and UTC hour in [from, to) with hits, its
// hits and how many of the hour's minutes had some.
func (cs Counts) SiteHours(ctx context.Context, from, to time.Time) ([]traffic.SiteHour, error) {
	rows, err := cs.c.conn.Query(ctx, querySiteHours, from.Unix(), to.Unix())
	if err != nil {
		return nil, fmt.Errorf("site hours: %w", err)
	}
	defer rows.Close()
	var out []traffic.SiteHour
	for rows.Next() {
		var (
			h    traffic.SiteHour
			hour uint32
			n    uint64
		)
		if err := rows.Scan(&h.Site, &hour, &n, &h.Hits); err != nil {
			return nil, fmt.Errorf("site hours: %w", err)
		}
		h.Hour, h.Minutes = time.Unix(int64(hour), 0).UTC(), int(n)
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("site hours: %w", err)
	}
	return out, nil
}

// siteMinutes reads (site, minute) rows into a map.
func (cs Counts) siteMinutes(ctx context.Context, what, query string, args ...any) (map[string]time.Time, error) {
	rows, err := cs.c.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var (
			site string
			t    time.Time
		)
		if err := rows.Scan(&site, &t); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out[site] = t.UTC()
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
