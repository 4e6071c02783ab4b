package sweep

import (
	"bufio"
	"bytes"
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
// name without extension). A header line is optional; with one, its
// columns are found by name (time: timestamp, time, date, datetime, ts;
// count: count, value, views, hits, requests, visits; site: site, host,
// domain; path: path, page, url, uri) and the others are ignored, so an
// export with a label or a second metric reads as it is. Fields are
// split by commas, or by tabs or semicolons when the first line has no
// comma. Times are RFC 3339 (UTC or with an offset), 2006-01-02 15:04:05
// (with T or a space, seconds and fractions optional) read as UTC, or
// Unix seconds or milliseconds. A row's count is put in the minute its
// timestamp falls in, so rows every 5 minutes are counts per 5 minutes.
// Rows of 0 count nothing but say that the data covers that time: a
// site's data begins at its first row, and baselines do not reach
// before it. A row whose count is empty, NaN, null, NA, N/A or None is
// left out, as if not written (Missing): for a file of one series a
// hole in its site's data, over which no drop is judged; a page's row
// left out beside its site's other rows is, as in ClickHouse, a minute
// without its views.
type CountsFile struct {
	rows        []countRow // by site, path, minute; one per minute
	First, Last time.Time  // the first and last minute with a row
	// Missing is how many rows had no count, and MissingLine the first
	// of them: said to the user, as they are read as holes.
	Missing, MissingLine int
	// Repeated is how many rows had the time of an earlier row of the
	// same page, and were added to it (RepeatedLine the first): a file
	// concatenated twice, or a column of several series read as one.
	Repeated, RepeatedLine int
	// Totals is the line of a totals row left out ("Total,12345"), or 0.
	Totals int
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
	br := bufio.NewReaderSize(r, 64<<10)
	if bom, _ := br.Peek(3); string(bom) == "\ufeff" {
		_, _ = br.Discard(3) // a spreadsheet's byte order mark
	}
	cr := csv.NewReader(br)
	cr.Comma = sniffComma(br)
	cr.FieldsPerRecord = -1 // the first row says which form; checked below
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true // "2026-03-02 00:00:00; example.com; /p; 3"
	cr.Comment = '#'           // an export's preamble
	byKey := map[countRow]int{}
	var exact []int64 // each row's first time, to tell a repeated one
	f := &CountsFile{}
	var cols countColumns
	series := strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	for first := true; ; first = false {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0) // blank lines are skipped, and counted
		if first {
			header := false
			if cols, header, err = readColumns(rec); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, line, err)
			}
			if header {
				continue
			}
		}
		if len(rec) != cols.fields {
			return nil, fmt.Errorf("%s:%d: want %d fields like the first line, got %d", name, line, cols.fields, len(rec))
		}
		stamp := strings.TrimSpace(rec[cols.at])
		if isTotals(stamp) {
			f.Totals = line
			continue
		}
		if cols.clock >= 0 {
			stamp += " " + clockOf(strings.TrimSpace(rec[cols.clock]))
		}
		at, err := parseCountTime(stamp)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: timestamp: %s, got %q", name, line, timeWanted(stamp), stamp)
		}
		site, path, count := series, "/", strings.TrimSpace(rec[cols.count])
		if cols.site >= 0 {
			site = rec[cols.site]
		}
		if cols.path >= 0 {
			path = rec[cols.path]
		}
		if path == "" || path[0] != '/' {
			return nil, fmt.Errorf("%s:%d: path: must start with /, got %q", name, line, path)
		}
		if missingCount(count) {
			if f.Missing++; f.Missing == 1 {
				f.MissingLine = line
			}
			continue
		}
		n, ok := parseCount(count)
		if !ok {
			return nil, fmt.Errorf("%s:%d: count: want a whole number, got %q", name, line, count)
		}
		row := countRow{site: site, path: path, minute: at.UTC().Truncate(time.Minute)}
		if i, ok := byKey[row]; ok {
			f.rows[i].hits += n
			if exact[i] == at.UnixNano() {
				if f.Repeated++; f.Repeated == 1 {
					f.RepeatedLine = line
				}
			}
			continue
		}
		if len(f.rows) >= MaxCountsRows {
			return nil, fmt.Errorf("%s:%d: more than %d rows; backtest a shorter span", name, line, MaxCountsRows)
		}
		byKey[row] = len(f.rows)
		row.hits = n
		f.rows = append(f.rows, row)
		exact = append(exact, at.UnixNano())
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
	if thousands.MatchString(s) {
		s = strings.ReplaceAll(s, ",", "") // "1,190", as a spreadsheet writes it
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f != math.Trunc(f) || f >= 1<<53 {
		return 0, false
	}
	return uint64(f), true
}

// countTimeLayouts are the times a counts file may hold: RFC 3339 (a
// space for its T, or an offset without its colon, as some exports
// write it), or a date and time without a zone, read as UTC. Fractions
// of a second are read by each.
var countTimeLayouts = []string{time.RFC3339, "2006-01-02 15:04:05Z07:00", "2006-01-02T15:04:05Z0700", "2006-01-02 15:04:05Z0700",
	"2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02T15:04", "20060102 15:04"}

func parseCountTime(s string) (time.Time, error) {
	if t, ok := parseCompactTime(s); ok {
		return t, nil
	}
	if t, ok := parseUnixTime(s); ok {
		return t, nil
	}
	var err error
	for _, layout := range countTimeLayouts {
		var t time.Time
		if t, err = time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, err
}

// Unix times are read between these (2000 to 2100): a compact date
// (201502262140) is a number too, and is no time.
const minUnix, maxUnix = 946684800, 4102444800

// parseUnixTime reads Unix seconds or milliseconds of 2000 to 2100,
// fractions allowed, as spreadsheets and metrics exports write them.
func parseUnixTime(s string) (time.Time, bool) {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return time.Time{}, false
	}
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil:
		return time.Time{}, false
	case v >= minUnix*1000 && v < maxUnix*1000:
		v /= 1000 // milliseconds
	case v < minUnix || v >= maxUnix:
		return time.Time{}, false
	}
	sec, frac := math.Modf(v)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), true
}

// countColumns is where a row's fields are (-1: not in the file).
type countColumns struct {
	fields, at, site, path, count int
	// clock is a column of times of day beside a column of dates (at):
	// "date,time,value", as spreadsheets write them.
	clock int
}

// columnNames are the header names each column is found by.
var columnNames = map[string][]string{
	"time":  {"timestamp", "time", "date", "datetime", "ts", "date hour", "datehour", "hour"},
	"count": {"count", "value", "views", "pageviews", "page_views", "page views", "hits", "requests", "visits", "events"},
	"site":  {"site", "host", "domain"},
	"path":  {"path", "page", "url", "uri"},
}

// readColumns reads the first line: a header if its first field is not
// a time and it names a column, or is two fields the second of which is
// no count ("Time,pricing views"); its columns then found by name. Else
// the columns by position (timestamp,count or timestamp,site,path,count),
// a first field that is no time an error on this line, not a header
// quietly left out.
func readColumns(rec []string) (countColumns, bool, error) {
	c := countColumns{fields: len(rec), site: -1, path: -1, clock: -1}
	_, err := parseCountTime(strings.TrimSpace(rec[0]))
	if err != nil && !namesAColumn(rec) && (len(rec) != 2 || isCount(strings.TrimSpace(rec[1]))) {
		return c, false, fmt.Errorf("timestamp: want RFC 3339 like 2026-03-29T12:00:00Z, 2026-03-29 12:00:00 (UTC) or Unix seconds or milliseconds, or a header naming the columns, got %q", rec[0])
	}
	if err == nil {
		switch len(rec) {
		case 2:
			c.count = 1
		case 4:
			c.site, c.path, c.count = 1, 2, 3
		default:
			return c, false, fmt.Errorf("want 4 fields (timestamp,site,path,count) or 2 (timestamp,count), got %d", len(rec))
		}
		return c, false, nil
	}
	find := func(kind string) int {
		for i, f := range rec {
			if slices.Contains(columnNames[kind], strings.ToLower(strings.TrimSpace(f))) {
				return i
			}
		}
		return -1
	}
	named := func(name string) int {
		return slices.IndexFunc(rec, func(f string) bool { return strings.EqualFold(strings.TrimSpace(f), name) })
	}
	c.at, c.count, c.site, c.path = find("time"), find("count"), find("site"), find("path")
	if d, tm := named("date"), max(named("time"), named("hour")); d >= 0 && tm >= 0 && len(rec) > 2 {
		c.at, c.clock = d, tm
	}
	if len(rec) == 2 {
		// Two columns are a time and its count, whatever the count is
		// called ("Time,pricing views", as a dashboard exports it).
		c.at = max(c.at, 0)
		c.count, c.site, c.path = 1-c.at, -1, -1
	}
	switch {
	case c.at < 0:
		return c, true, fmt.Errorf("want a header naming a column of times (%s), or a row whose first field is a time (RFC 3339 like 2026-03-29T12:00:00Z, 2026-03-29 12:00:00 or Unix seconds), got %q",
			strings.Join(columnNames["time"], ", "), strings.Join(rec, string(',')))
	case c.count < 0 && slices.ContainsFunc(rec[1:], func(f string) bool { return strings.HasPrefix(strings.TrimSpace(f), "/") }):
		return c, true, errors.New("header: a column per page is not read; write a row per page and time: timestamp,site,path,count")
	case c.count < 0:
		return c, true, fmt.Errorf("header: no column of counts named %s", strings.Join(columnNames["count"], ", "))
	}
	return c, true, nil
}

// namesAColumn reports whether a first line names one of the columns.
func namesAColumn(rec []string) bool {
	for _, f := range rec {
		f = strings.ToLower(strings.TrimSpace(f))
		for _, names := range columnNames {
			if slices.Contains(names, f) {
				return true
			}
		}
	}
	return false
}

// isCount reports whether a field is a count, or says one is missing.
func isCount(s string) bool {
	_, ok := parseCount(s)
	return ok || missingCount(s)
}

// sniffComma is what the file's fields are split by: a tab or a
// semicolon when its first line has one and no comma, else a comma.
func sniffComma(br *bufio.Reader) rune {
	head, _ := br.Peek(br.Size())
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	switch {
	case bytes.IndexByte(head, ',') >= 0:
		return ','
	case bytes.IndexByte(head, '\t') >= 0:
		return '\t'
	case bytes.IndexByte(head, ';') >= 0:
		return ';'
	}
	return ','
}

// missingCount reports whether a count field says the count is not
// known, as exports write a gap.
func missingCount(s string) bool {
	switch strings.ToLower(s) {
	case "", "nan", "null", "na", "n/a", "none":
		return true
	}
	return false
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
