package sweep

import (
	"regexp"
	"slices"
	"strings"
	"time"
)

// The shapes analytics exports give times, counts and totals in, which
// a counts file reads besides the plain ones (countsfile.go).

// compactLayouts are dates and times written as one number, by
// analytics exports ("Date Hour" 2025030314): read before Unix times,
// as a 10-digit date and hour would read as a Unix time decades on.
var compactLayouts = map[int]string{10: "2006010215", 12: "200601021504", 14: "20060102150405"}

// parseCompactTime reads a compact date and hour (or minute, or second)
// of 1990 to 2100, as UTC.
func parseCompactTime(s string) (time.Time, bool) {
	layout, ok := compactLayouts[len(s)]
	if !ok || strings.Trim(s, "0123456789") != "" {
		return time.Time{}, false
	}
	t, err := time.Parse(layout, s)
	if err != nil || t.Year() < 1990 || t.Year() > 2100 {
		return time.Time{}, false
	}
	return t, true
}

// clockOf is a time-of-day column's value as a clock: an hour alone
// ("14", as a "Date,Hour" export writes it) is that hour's start.
func clockOf(s string) string {
	if len(s) <= 2 && s != "" && strings.Trim(s, "0123456789") == "" {
		return strings.Repeat("0", 2-len(s)) + s + ":00"
	}
	return s
}

// timeWanted is what a timestamp that did not parse should have been:
// a date alone says what is missing, as counts per day cannot be judged
// by the hour.
func timeWanted(s string) string {
	for _, layout := range []string{"2006-01-02", "20060102", "01/02/2006", "02.01.2006"} {
		if _, err := time.Parse(layout, s); err == nil {
			return "a date without a time of day: export views per hour or finer (rows of whole days cannot be judged by the hour)"
		}
	}
	return "want RFC 3339 like 2026-03-29T12:00:00Z, 2026-03-29 12:00:00 (UTC), 2026032912 or Unix seconds or milliseconds"
}

// isTotals reports whether a row's time field names it a totals row, as
// spreadsheets end an export.
func isTotals(s string) bool {
	return slices.Contains([]string{"total", "totals", "grand total", "sum"}, strings.ToLower(s))
}

// thousands is a count written with thousands separators.
var thousands = regexp.MustCompile(`^[0-9]{1,3}(,[0-9]{3})+$`)

// RowStep is the file's resolution: the tenth percentile of the gaps
// between one row of a page and its next (0 with no two rows of a
// page), as a backtest reads a site's step. Rows further apart than a
// rule's window (counts per day) leave it a row or none each time it is
// judged; a sparse page of minutes, its rows hours apart at night, has
// a step of minutes.
func (f *CountsFile) RowStep() time.Duration {
	var gaps []time.Duration
	for i := 1; i < len(f.rows); i++ {
		if a, b := f.rows[i-1], f.rows[i]; a.site == b.site && a.path == b.path {
			gaps = append(gaps, b.minute.Sub(a.minute))
		}
	}
	if len(gaps) == 0 {
		return 0
	}
	slices.Sort(gaps)
	return gaps[len(gaps)/10]
}
