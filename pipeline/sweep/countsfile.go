package sweep

import (
	"cmp"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

// CountsFile is page-view counts read from a CSV file, for a backtest on
// history exported from anywhere: one row per page and interval,
//
//	timestamp,site,path,count
//	2015-02-26T21:40:00Z,example.com,/pricing,104
//
// or, for one series alone, as most exports and benchmarks write it,
//
//	timestamp,value
//	2015-02-26 21:40:00,104
//
// whose rows are the page / of a site named after the file (its base
// name without extension). A header line is optional. Times are RFC 3339
// (UTC or with an offset), or 2006-01-02 15:04:05 (with T or a space,
// seconds optional) read as UTC. A row's count is put in the minute its
// timestamp falls in, so rows every 5 minutes are counts per 5 minutes.
// Rows of 0 count nothing but say that the data covers that time: a
// site's data begins at its first row, and baselines do not reach
// before it.
type CountsFile struct {
	rows        []countRow // by site, path, minute; one per minute
	First, Last time.Time  // the first and last minute with a row
}

type countRow struct {
	site, path string
	minute     time.Time
	hits       uint64
}

// MaxCountsRows bounds a counts file, which is read into memory.
const MaxCountsRows = 50_000_000

// ReadCounts reads a counts file; name is for errors ("counts.csv:12: ...")
// and names the site of a file of one series.
func ReadCounts(r io.Reader, name string) (*CountsFile, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // the first row says which form; checked below
	cr.ReuseRecord = true
	byKey := map[countRow]int{}
	f := &CountsFile{}
	fields := 0
	series := strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if fields == 0 {
			fields = len(rec)
			if fields != 2 && fields != 4 {
				return nil, fmt.Errorf("%s:%d: want 4 fields (timestamp,site,path,count) or 2 (timestamp,count), got %d", name, line, fields)
			}
		}
		if len(rec) != fields {
			return nil, fmt.Errorf("%s:%d: want %d fields like the first line, got %d", name, line, fields, len(rec))
		}
		if line == 1 && strings.EqualFold(strings.TrimSpace(rec[0]), "timestamp") {
			continue
		}
		at, err := parseCountTime(strings.TrimSpace(rec[0]))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: timestamp: want RFC 3339 like 2026-03-29T12:00:00Z, or 2026-03-29 12:00:00 (UTC), got %q", name, line, rec[0])
		}
		site, path, count := series, "/", rec[1]
		if fields == 4 {
			site, path, count = rec[1], rec[2], rec[3]
		}
		if path == "" || path[0] != '/' {
			return nil, fmt.Errorf("%s:%d: path: must start with /, got %q", name, line, path)
		}
		n, ok := parseCount(strings.TrimSpace(count))
		if !ok {
			return nil, fmt.Errorf("%s:%d: count: want a whole number, got %q", name, line, count)
		}
		row := countRow{site: site, path: path, minute: at.UTC().Truncate(time.Minute)}
		if i, ok := byKey[row]; ok {
			f.rows[i].hits += n
			continue
		}
		if len(f.rows) >= MaxCountsRows {
			return nil, fmt.Errorf("%s:%d: more than %d rows; backtest a shorter span", name, line, MaxCountsRows)
		}
		byKey[row] = len(f.rows)
		row.hits = n
		f.rows = append(f.rows, row)
	}
	if len(f.rows) == 0 {
		return nil, fmt.Errorf("%s: no counts", name)
	}
	slices.SortFunc(f.rows, func(a, b countRow) int {
		return cmp.Or(strings.Compare(a.site, b.site), strings.Compare(a.path, b.path), a.minute.Compare(b.minute))
	})
	f.First, f.Last = f.rows[0].minute, f.rows[0].minute
	for _, r := range f.rows {
		f.First, f.Last = minTime(f.First, r.minute), maxTime(f.Last, r.minute)
	}
	return f, nil
}

// ScanMinutes streams the rows in [q.From, q.To) of q's sites, as
// ClickHouse does, rows of 0 included.
func (f *CountsFile) ScanMinutes(ctx context.Context, q traffic.MinuteScan, fn func(site, path string, minute time.Time, hits uint64) error) error {
	for _, r := range f.rows {
		if r.minute.Before(q.From) || !r.minute.Before(q.To) || (len(q.Sites) > 0 && !slices.Contains(q.Sites, r.site)) {
			continue
		}
		if err := fn(r.site, r.path, r.minute, r.hits); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// parseCount reads a count: a whole number, written as one (104) or as
// a float with nothing after its point (104.0, as pandas writes them).
func parseCount(s string) (uint64, bool) {
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f != math.Trunc(f) || f >= 1<<53 {
		return 0, false
	}
	return uint64(f), true
}

// countTimeLayouts are the times a counts file may hold: RFC 3339, or
// a date and time without a zone, read as UTC.
var countTimeLayouts = []string{time.RFC3339, "2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02T15:04"}

func parseCountTime(s string) (time.Time, error) {
	var err error
	for _, layout := range countTimeLayouts {
		var t time.Time
		if t, err = time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, err
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
