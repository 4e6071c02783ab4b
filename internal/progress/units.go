package progress

import (
	"fmt"
	"strconv"
	"time"
)

var (
	byteUnits  = []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	countUnits = []string{"", "k", "M", "G", "T", "P", "E"}
)

// formatBytes writes n in binary units with three significant digits, so
// the status line keeps about the same width as the numbers grow.
func formatBytes(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, i := float64(n), 0
	for v >= 1024 && i < len(byteUnits)-1 {
		v /= 1024
		i++
	}
	return threeDigits(v) + " " + byteUnits[i]
}

// formatCount writes n with a k/M/G suffix and three significant digits.
// It moves up a unit from 999.5 so rounding never shows "1000k".
func formatCount(n int64) string {
	if n < 1000 {
		return strconv.FormatInt(n, 10)
	}
	v, i := float64(n), 0
	for v >= 999.5 && i < len(countUnits)-1 {
		v /= 1000
		i++
	}
	return threeDigits(v) + countUnits[i]
}

// threeDigits formats v (at least 1) to three significant digits. The
// thresholds sit where rounding adds a digit, so 9.996 gives "10.0", not
// "10.00".
func threeDigits(v float64) string {
	switch {
	case v < 9.995:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 99.95:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
}

// formatThousands writes n exactly, with comma separators, for the
// summary where the exact count is the point.
func formatThousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	sign := ""
	if n < 0 {
		sign, s = "-", s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return sign + string(out)
}

// formatClock writes d as h:mm:ss, rounded to the second; hours are not
// folded into days, since a backfill that long is still read in hours.
func formatClock(d time.Duration) string {
	secs := int64(d.Round(time.Second) / time.Second)
	if secs < 0 {
		secs = 0
	}
	return fmt.Sprintf("%d:%02d:%02d", secs/3600, secs/60%60, secs%60)
}

// shortenPath fits a file name into n columns keeping its end, since that
// is where rotated logs differ: "…ccess.log.3.gz". Columns are counted as
// runes, which is right for the ASCII paths logs almost always have.
func shortenPath(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	return "…" + string(r[len(r)-n+1:])
}

// cutLine fits a status line into n columns keeping its start, where the
// percentage and counts are; only very narrow terminals need it.
func cutLine(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:max(n, 0)])
}
