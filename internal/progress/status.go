package progress

import (
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// maxETA is where an estimate stops meaning anything; beyond it (a stalled
// reader, a nearly zero rate) the ETA is shown as unknown.
const maxETA = 1000 * time.Hour

// minFileColumns is the narrowest a file name is shown in: fewer columns
// than this hold too little of the name to tell files apart.
const minFileColumns = 8

// status is one reading of the counters, with the rates at that moment.
type status struct {
	bytes, lines, total int64
	elapsed             time.Duration
	byteRate, lineRate  float64 // per second, smoothed; valid when rated
	rated               bool
	file                string
}

// shownTotal is what the bytes are out of. Files still being written grow
// past the total measured when they were found; the total follows so the
// percentage never passes 100.
func (s status) shownTotal() int64 { return max(s.total, s.bytes) }

func (s status) percent() float64 {
	return 100 * float64(s.bytes) / float64(s.shownTotal())
}

// eta is the time left at the current rate; ok is false when there is no
// total, no rate yet, or a rate too low to say.
func (s status) eta() (time.Duration, bool) {
	if s.total <= 0 || !s.rated {
		return 0, false
	}
	left := s.total - s.bytes
	if left <= 0 {
		return 0, true
	}
	if s.byteRate <= 0 {
		return 0, false
	}
	secs := float64(left) / s.byteRate
	if secs >= maxETA.Seconds() {
		return 0, false
	}
	return time.Duration(secs * float64(time.Second)).Round(time.Second), true
}

// line is the terminal's status line, at most width-1 columns: writing in
// the last column makes some terminals wrap, and a wrapped line can no
// longer be redrawn in place with \r.
func (s status) line(width int) string {
	var b strings.Builder
	if s.total > 0 {
		fmt.Fprintf(&b, "%5.1f%% %s/%s", s.percent(), formatBytes(s.bytes), formatBytes(s.shownTotal()))
	} else {
		b.WriteString(formatBytes(s.bytes))
	}
	byteRate, lineRate := "?", "?"
	if s.rated {
		byteRate, lineRate = formatBytes(int64(s.byteRate)), formatCount(int64(s.lineRate))
	}
	eta := "?"
	if d, ok := s.eta(); ok {
		eta = formatClock(d)
	}
	fmt.Fprintf(&b, " %s/s %s lines %s/s ETA %s", byteRate, formatCount(s.lines), lineRate, eta)
	room := width - 1 - utf8.RuneCountInString(b.String()) - 1
	if s.file != "" && room >= minFileColumns {
		b.WriteString(" " + shortenPath(s.file, room))
	}
	return cutLine(b.String(), width-1)
}

// summary is the final line, with exact counts and average rates.
func (s status) summary(verb string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", verb, formatBytes(s.bytes))
	if s.total > s.bytes {
		fmt.Fprintf(&b, " of %s (%.1f%%)", formatBytes(s.total), s.percent())
	}
	fmt.Fprintf(&b, ", %s lines in %s", formatThousands(s.lines), formatClock(s.elapsed))
	if secs := s.elapsed.Seconds(); secs > 0 {
		fmt.Fprintf(&b, " (%s/s, %s lines/s)",
			formatBytes(int64(float64(s.bytes)/secs)), formatThousands(int64(math.Round(float64(s.lines)/secs))))
	}
	return b.String()
}

// attrs are the quiet mode's periodic log fields: numbers, not the
// terminal's human units, so log queries can compare them.
func (s status) attrs() []any {
	a := []any{slog.Int64("bytes", s.bytes), slog.Int64("lines", s.lines)}
	if s.total > 0 {
		a = append(a, slog.Int64("total_bytes", s.shownTotal()),
			slog.Float64("percent", math.Round(s.percent()*10)/10))
	}
	if s.rated {
		a = append(a, slog.Int64("bytes_per_sec", int64(s.byteRate)),
			slog.Int64("lines_per_sec", int64(s.lineRate)))
	}
	if d, ok := s.eta(); ok {
		a = append(a, slog.Duration("eta", d))
	}
	if s.file != "" {
		a = append(a, slog.String("file", s.file))
	}
	return a
}

// summaryAttrs are the final log line's fields, with average rates.
func (s status) summaryAttrs() []any {
	a := []any{slog.Int64("bytes", s.bytes), slog.Int64("lines", s.lines),
		slog.Duration("elapsed", s.elapsed.Round(time.Millisecond))}
	if s.total > s.bytes {
		a = append(a, slog.Int64("total_bytes", s.total))
	}
	if secs := s.elapsed.Seconds(); secs > 0 {
		a = append(a, slog.Int64("bytes_per_sec", int64(float64(s.bytes)/secs)),
			slog.Int64("lines_per_sec", int64(math.Round(float64(s.lines)/secs))))
	}
	return a
}

// ewma is an exponentially weighted moving average of a rate, weighted by
// time so uneven draw intervals count for what they cover. Its weight is
// tracked too and divided out, so the first samples give the plain mean
// instead of a value dragged towards the zero it started from.
type ewma struct {
	sum, weight float64
}

func (e *ewma) observe(rate float64, dt time.Duration) {
	keep := math.Exp(-dt.Seconds() / rateWindow.Seconds())
	e.sum = e.sum*keep + rate*(1-keep)
	e.weight = e.weight*keep + (1 - keep)
}

func (e *ewma) value() (float64, bool) {
	if e.weight == 0 {
		return 0, false
	}
	return e.sum / e.weight, true
}
