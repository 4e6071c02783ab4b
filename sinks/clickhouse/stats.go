package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

// maxReferrers bounds TopReferrers' limit: a notification shows ten, and a
// page linked from a million places should not ship them all.
const maxReferrers = 1000

// PageSeries returns a page's hits per minute for the minutes starting in
// [from, to), oldest first. It reads page_minutes, so it is exact whether or
// not batches loaded twice have been merged yet, and reaches as far back as
// the counts do. Minutes without hits are absent: callers that draw fill
// the gaps.
func (t Traffic) PageSeries(ctx context.Context, site, path string, from, to time.Time) ([]traffic.MinuteHits, error) {
	rows, err := t.c.conn.Query(ctx, queryPageSeries, site, path, from.Unix(), to.Unix())
	if err != nil {
		return nil, fmt.Errorf("per-minute hits of %s%s in [%d, %d): %w", site, path, from.Unix(), to.Unix(), err)
	}
	defer rows.Close()
	var out []traffic.MinuteHits
	for rows.Next() {
		var m traffic.MinuteHits
		if err := rows.Scan(&m.Minute, &m.Hits); err != nil {
			return nil, fmt.Errorf("per-minute hits of %s%s: %w", site, path, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("per-minute hits of %s%s: %w", site, path, err)
	}
	return out, nil
}

// TopReferrers returns the referers that sent a page the most hits in
// [from, to), most first (ties by referer), at most limit of them (capped
// at 1000; limit <= 0 asks for none). Hits without a referer ("-" or
// empty) are not counted. It reads the raw hits, which are kept for
// ingest.load.retention.raw_hits_days: an older window finds nothing.
func (t Traffic) TopReferrers(ctx context.Context, site, path string, from, to time.Time, limit int) ([]traffic.Referrer, error) {
	if limit <= 0 {
		return nil, nil
	}
	limit = min(limit, maxReferrers)
	rows, err := t.c.conn.Query(ctx, queryTopReferrers, site, path, from.Unix(), to.Unix(), limit)
	if err != nil {
		return nil, fmt.Errorf("top referrers of %s%s in [%d, %d): %w", site, path, from.Unix(), to.Unix(), err)
	}
	defer rows.Close()
	var out []traffic.Referrer
	for rows.Next() {
		var r traffic.Referrer
		if err := rows.Scan(&r.Referer, &r.Hits); err != nil {
			return nil, fmt.Errorf("top referrers of %s%s: %w", site, path, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("top referrers of %s%s: %w", site, path, err)
	}
	return out, nil
}
