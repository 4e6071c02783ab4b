package clickhouse

import (
	"context"
	"fmt"
	"slices"
	"strings"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

// visitorCounts answers a WindowQuery whose Measure is Visitors: each
// page's distinct visitors over each whole window, from page_clients.
func (cs Counts) visitorCounts(ctx context.Context, q traffic.WindowQuery) ([]traffic.PageCount, error) {
	sql, args := visitorCountsSQL(q)
	rows, err := cs.c.conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("visitor counts of %d starts to %d: %w", len(q.Starts), q.End.Unix(), err)
	}
	defer rows.Close()
	var out []traffic.PageCount
	for rows.Next() {
		var p traffic.PageCount
		if err := rows.Scan(&p.Site, &p.Path, &p.Counts); err != nil {
			return nil, fmt.Errorf("visitor counts: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("visitor counts: %w", err)
	}
	return out, nil
}

// visitorCountsSQL renders queryVisitorCounts for q. A start at or after
// End counts nothing, as in WindowCounts; the zero start reads every
// minute kept.
func visitorCountsSQL(q traffic.WindowQuery) (string, []any) {
	end := q.End.Unix()
	first := end
	var cols []string
	var args []any
	for _, s := range q.Starts {
		from := int64(0)
		if !s.IsZero() {
			from = max(s.Unix(), 0)
		}
		if from >= end {
			cols = append(cols, "toUInt64(0)")
			continue
		}
		cols = append(cols, "uniqExactIf(client, minute >= toDateTime(?))")
		args = append(args, from)
		first = min(first, from)
	}
	args = append(args, first, end, len(q.Sites) == 0, siteSet(q.Sites), q.Floor)
	return fmt.Sprintf(queryVisitorCounts, strings.Join(cols, ", ")), args
}

// SpanVisitors calls fn with each asked page's distinct visitors in each
// of q's spans (span is its index in q.Spans), for the baselines of rules
// counting visitors. Pages with none in any span are not called.
func (cs Counts) SpanVisitors(ctx context.Context, q traffic.SpanQuery, fn func(site, path string, span int, visitors uint64)) error {
	if len(q.Sites) == 0 || (len(q.Paths) == 0 && !q.AllPaths) || len(q.Spans) == 0 {
		return nil
	}
	sql, args := spanVisitorsSQL(q)
	rows, err := cs.c.conn.Query(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("visitors of %d pages over %d spans: %w", len(q.Paths), len(q.Spans), err)
	}
	defer rows.Close()
	for rows.Next() {
		var site, path string
		var counts []uint64
		if err := rows.Scan(&site, &path, &counts); err != nil {
			return fmt.Errorf("span visitors: %w", err)
		}
		for i, n := range counts {
			if n > 0 {
				fn(site, path, i, n)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("span visitors: %w", err)
	}
	return nil
}

// spanVisitorsSQL renders querySpanVisitors for q.
func spanVisitorsSQL(q traffic.SpanQuery) (string, []any) {
	const between = "minute >= toDateTime(?) AND minute < toDateTime(?)"
	var cols, ranges []string
	var colArgs, rangeArgs []any
	var spans []timeSpan
	for _, sp := range q.Spans {
		cols = append(cols, "uniqExactIf(client, "+between+")")
		colArgs = append(colArgs, sp.From.Unix(), sp.To.Unix())
		spans = append(spans, timeSpan{from: sp.From.Unix(), to: sp.To.Unix()})
	}
	for _, r := range mergeSpans(spans) {
		ranges = append(ranges, "("+between+")")
		rangeArgs = append(rangeArgs, r.from, r.to)
	}
	paths := ch.GroupSet{Value: []any{""}}
	if !q.AllPaths && len(q.Paths) > 0 {
		paths = ch.GroupSet{Value: anys(q.Paths)}
	}
	args := slices.Concat(colArgs, []any{siteSet(q.Sites), q.AllPaths, paths}, rangeArgs)
	return fmt.Sprintf(querySpanVisitors, strings.Join(cols, ", "), strings.Join(ranges, " OR ")), args
}

func anys(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
