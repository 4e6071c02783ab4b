package clickhouse

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

// HourCounts calls fn with the hits per whole UTC hour of the pages of
// q.Sites whose path is one of q.Paths, in the hours starting in q.Spans,
// as the rows arrive, in no order. Hours without hits are absent.
func (c *Client) HourCounts(ctx context.Context, q traffic.HourQuery, fn func(site, path string, hour time.Time, hits uint64)) error {
	if len(q.Sites) == 0 || len(q.Paths) == 0 || len(q.Spans) == 0 {
		return nil
	}
	sql, args := hourCountsSQL(q)
	rows, err := c.conn.Query(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("hour counts of %d paths over %d spans: %w", len(q.Paths), len(q.Spans), err)
	}
	defer rows.Close()
	var (
		site, path string
		hour       uint32
		hits       uint64
	)
	for rows.Next() {
		if err := rows.Scan(&site, &path, &hour, &hits); err != nil {
			return fmt.Errorf("hour counts: %w", err)
		}
		fn(site, path, time.Unix(int64(hour), 0).UTC(), hits)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("hour counts: %w", err)
	}
	return nil
}

func hourCountsSQL(q traffic.HourQuery) (string, []any) {
	spans := make([]timeSpan, len(q.Spans))
	for i, s := range q.Spans {
		spans[i] = timeSpan{s.From.Unix(), s.To.Unix()}
	}
	args := []any{siteSet(q.Sites), siteSet(q.Paths)}
	var conds []string
	for _, s := range mergeSpans(spans) {
		conds = append(conds, "(minute >= toDateTime(?) AND minute < toDateTime(?))")
		args = append(args, s.from, s.to)
	}
	return fmt.Sprintf(queryHourCounts, strings.Join(conds, " OR ")), args
}

// DataStarts returns each site's first minute with hits.
func (c *Client) DataStarts(ctx context.Context) (map[string]time.Time, error) {
	rows, err := c.conn.Query(ctx, queryDataStarts)
	if err != nil {
		return nil, fmt.Errorf("data starts: %w", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var (
			site string
			t    time.Time
		)
		if err := rows.Scan(&site, &t); err != nil {
			return nil, fmt.Errorf("data starts: %w", err)
		}
		out[site] = t.UTC()
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("data starts: %w", err)
	}
	return out, nil
}
