package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/pagewatch/pagewatch/console/records"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// The console's reads of page_clients (console.VisitorStore, and the live
// view's visitors): who sent a page's hits, as distinct client keys and
// client classes. Statements in consolequeries.go.

// liveVisitors fills in the visitors of the live view's pages over its
// hour [start, end), the last 5 minutes from five.
func (t Traffic) liveVisitors(ctx context.Context, pages []records.LivePage, five, start, end time.Time) error {
	if len(pages) == 0 {
		return nil
	}
	var sites, paths []string
	seenS, seenP := map[string]bool{}, map[string]bool{}
	at := make(map[[2]string]int, len(pages))
	for i, p := range pages {
		at[[2]string{p.Site, p.Path}] = i
		if !seenS[p.Site] {
			seenS[p.Site], sites = true, append(sites, p.Site)
		}
		if !seenP[p.Path] {
			seenP[p.Path], paths = true, append(paths, p.Path)
		}
	}
	rows, err := t.c.conn.Query(ctx, queryConsoleLiveVisitors, five.Unix(), keySet(sites), keySet(paths), start.Unix(), end.Unix())
	if err != nil {
		return fmt.Errorf("live visitors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			site, path string
			u5, u60    uint64
		)
		if err := rows.Scan(&site, &path, &u5, &u60); err != nil {
			return fmt.Errorf("live visitors: %w", err)
		}
		if i, ok := at[[2]string{site, path}]; ok {
			pages[i].Visitors5m, pages[i].Visitors1h = u5, u60
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("live visitors: %w", err)
	}
	return nil
}

// PageVisitors returns a page's visitors in each step of [from, to): a
// minute or an hour (any other step is read by the hour).
func (t Traffic) PageVisitors(ctx context.Context, site, path string, from, to time.Time, step time.Duration) ([]traffic.MinuteHits, error) {
	secs := int64(60)
	if step != time.Minute {
		secs = 3600
	}
	rows, err := t.c.conn.Query(ctx, queryConsolePageVisitors, secs, secs, site, path, from.Unix(), to.Unix())
	if err != nil {
		return nil, fmt.Errorf("visitors of %s%s: %w", site, path, err)
	}
	defer rows.Close()
	var out []traffic.MinuteHits
	for rows.Next() {
		var m traffic.MinuteHits
		if err := rows.Scan(&m.Minute, &m.Hits); err != nil {
			return nil, fmt.Errorf("visitors of %s%s: %w", site, path, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("visitors of %s%s: %w", site, path, err)
	}
	return out, nil
}

// PageClasses returns a page's hits per client class in [from, to),
// most first.
func (t Traffic) PageClasses(ctx context.Context, site, path string, from, to time.Time) ([]records.ClassCount, error) {
	rows, err := t.c.conn.Query(ctx, queryConsolePageClasses, site, path, from.Unix(), to.Unix())
	if err != nil {
		return nil, fmt.Errorf("client classes of %s%s: %w", site, path, err)
	}
	defer rows.Close()
	var out []records.ClassCount
	for rows.Next() {
		var (
			c              records.ClassCount
			class, counted uint8
		)
		if err := rows.Scan(&class, &counted, &c.Hits, &c.Clients); err != nil {
			return nil, fmt.Errorf("client classes of %s%s: %w", site, path, err)
		}
		c.Class, c.Counted = hit.Class(class).String(), counted == 1
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("client classes of %s%s: %w", site, path, err)
	}
	return out, nil
}
