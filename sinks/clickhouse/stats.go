package clickhouse

import (
	"context"
	"fmt"
	"time"
)

// MinuteHits is one page's hit count in one minute.
type MinuteHits struct {
	Minute time.Time // start of the minute
	Hits   uint64
}

// Referrer is one referer of a page and how many of its hits came from it.
type Referrer struct {
	Referer string // as logged: written by strangers, may contain anything
	Hits    uint64
}

// maxReferrers bounds TopReferrers' limit: a notification shows ten, and a
// page linked from a million places should not ship them all.
const maxReferrers = 1000

// PageSeries returns a page's hits per minute for the minutes starting in
// [from, to), oldest first. It reads page_minutes, so it is exact whether or
// not batches loaded twice have been merged yet, and reaches as far back as
// the counts do. Minutes without hits are absent: callers that draw fill
// the gaps.
func (c *Client) PageSeries(ctx context.Context, site, path string, from, to time.Time) ([]MinuteHits, error) {
	rows, err := c.conn.Query(ctx, queryPageSeries, site, path, from.Unix(), to.Unix())
	if err != nil {
		return nil, fmt.Errorf("per-minute hits of %s%s in [%d, %d): %w", site, path, from.Unix(), to.Unix(), err)
	}
	defer rows.Close()
	var out []MinuteHits
	for rows.Next() {
		var m MinuteHits
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
func (c *Client) TopReferrers(ctx context.Context, site, path string, from, to time.Time, limit int) ([]Referrer, error) {
	if limit <= 0 {
		return nil, nil
	}
	limit = min(limit, maxReferrers)
	rows, err := c.conn.Query(ctx, queryTopReferrers, site, path, from.Unix(), to.Unix(), limit)
	if err != nil {
		return nil, fmt.Errorf("top referrers of %s%s in [%d, %d): %w", site, path, from.Unix(), to.Unix(), err)
	}
	defer rows.Close()
	var out []Referrer
	for rows.Next() {
		var r Referrer
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
