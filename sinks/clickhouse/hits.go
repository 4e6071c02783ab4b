package clickhouse

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/pagewatch/pagewatch/pipeline/hit"
)

// InsertHits loads batches of hits and their per-minute counts. It is
// idempotent: inserting the same batches again changes no count (see
// schema/migrations/0001_init.sql). Rows are split by partition so that one
// batch never exceeds the server's partitions-per-insert limit, which a
// backfill spanning months would.
func (c *Client) InsertHits(ctx context.Context, batches []hit.Batch) error {
	byDay := map[int][]int{} // day → indexes into flat
	var flat []loaded
	minutes := map[minuteKey]uint64{}
	for _, b := range batches {
		for i := range b.Hits {
			h := &b.Hits[i]
			day := dayOf(h.Time)
			byDay[day] = append(byDay[day], len(flat))
			flat = append(flat, loaded{seq: b.Seq, hit: h})
			minutes[minuteKey{site: h.Site, path: h.Path, minute: h.Time.Unix() / 60 * 60, seq: b.Seq}]++
		}
	}
	if len(flat) == 0 {
		return nil
	}
	// Counts first: once a batch's raw hits are visible, so are its counts,
	// which is what anyone comparing the two (tests, operators) assumes.
	if err := c.insertMinutes(ctx, minutes); err != nil {
		return fmt.Errorf("insert %d page-minute counts: %w", len(minutes), err)
	}
	for _, day := range sortedKeys(byDay) {
		if err := c.insertHitRows(ctx, flat, byDay[day]); err != nil {
			return fmt.Errorf("insert %d hits of day %d: %w", len(byDay[day]), day, err)
		}
	}
	return nil
}

type loaded struct {
	seq uint64
	hit *hit.Hit
}

type minuteKey struct {
	site, path string
	minute     int64
	seq        uint64
}

func dayOf(t time.Time) int {
	y, m, d := t.UTC().Date()
	return y*10000 + int(m)*100 + d
}

func sortedKeys(m map[int][]int) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

func (c *Client) insertHitRows(ctx context.Context, flat []loaded, idx []int) error {
	n := len(idx)
	var (
		ts                          = make([]time.Time, n)
		site, path, method, ref, ua = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		status                      = make([]uint16, n)
		bytes, seq, offset          = make([]uint64, n), make([]uint64, n), make([]uint64, n)
	)
	for j, i := range idx {
		h := flat[i].hit
		ts[j], site[j], path[j], method[j] = h.Time, h.Site, h.Path, h.Method
		status[j], bytes[j], ref[j], ua[j] = h.Status, h.Bytes, h.Referer, h.UserAgent
		seq[j], offset[j] = flat[i].seq, h.Offset
	}
	return c.sendColumns(ctx, insertHits, ts, site, path, method, status, bytes, ref, ua, seq, offset)
}

func (c *Client) insertMinutes(ctx context.Context, minutes map[minuteKey]uint64) error {
	// One insert per month partition, in a stable order.
	byMonth := map[int][]minuteKey{}
	for k := range minutes {
		m := dayOf(time.Unix(k.minute, 0)) / 100
		byMonth[m] = append(byMonth[m], k)
	}
	months := make([]int, 0, len(byMonth))
	for m := range byMonth {
		months = append(months, m)
	}
	sort.Ints(months)
	for _, m := range months {
		keys := byMonth[m]
		n := len(keys)
		site, path := make([]string, n), make([]string, n)
		minute := make([]time.Time, n)
		seq, hits := make([]uint64, n), make([]uint64, n)
		for i, k := range keys {
			site[i], path[i], minute[i], seq[i], hits[i] = k.site, k.path, time.Unix(k.minute, 0).UTC(), k.seq, minutes[k]
		}
		if err := c.sendColumns(ctx, insertPageMinutes, site, path, minute, seq, hits); err != nil {
			return fmt.Errorf("month %d: %w", m, err)
		}
	}
	return nil
}

// sendColumns sends one block: each argument is a column's values, in
// the order the INSERT names them.
func (c *Client) sendColumns(ctx context.Context, query string, columns ...any) error {
	batch, err := c.conn.PrepareBatch(c.insertContext(ctx), query)
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	for i, col := range columns {
		if err := batch.Column(i).Append(col); err != nil {
			_ = batch.Abort()
			return fmt.Errorf("column %d: %w", i, err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

// PageCount returns a page's hits since a time (the zero time: all time).
func (c *Client) PageCount(ctx context.Context, site, path string, since time.Time) (uint64, error) {
	var n uint64
	sinceUnix := int64(0)
	if !since.IsZero() {
		sinceUnix = since.Unix()
	}
	if err := c.conn.QueryRow(ctx, queryPageCount, site, path, sinceUnix).Scan(&n); err != nil {
		return 0, fmt.Errorf("count hits of %s%s since %d: %w", site, path, sinceUnix, err)
	}
	return n, nil
}

// HitCount returns the number of distinct hits stored.
func (c *Client) HitCount(ctx context.Context) (uint64, error) {
	var n uint64
	if err := c.conn.QueryRow(ctx, queryHitCount).Scan(&n); err != nil {
		return 0, fmt.Errorf("count hits: %w", err)
	}
	return n, nil
}
