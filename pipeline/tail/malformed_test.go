package tail_test

import (
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// A malformed line is counted by reason and logged at warning, naming
// its file and byte offset; more within the minute are counted and
// logged at debug only; the lines after them are read. A line dated
// outside what ClickHouse keeps (1970 to 2106) is malformed "time": it
// was stored wrapped to another year.
func TestMalformedLinesAreNamedAndTheRestRead(t *testing.T) {
	b := setup(t)
	logs := b.captureLogs(t, slog.LevelInfo)
	reg := prometheus.NewRegistry()
	b.startWith(t, reg)

	good := string(b.lines[0])
	junk := [][]byte{
		[]byte("\x00\x00garbage\x1b[31m"),
		[]byte("not a log line at all"),
		[]byte(strings.Replace(good, "2015:", "2200:", 1)),
		[]byte(strings.Replace(good, "2015:", "1969:", 1)),
	}
	appendLines(t, b.log, b.lines[:5])
	appendLines(t, b.log, junk)
	appendLines(t, b.log, b.lines[5:10])
	b.waitHits(t, 10)
	if n := counter(t, reg, "pagewatch_ingest_tail_malformed_lines_total", "reason", "time"); n != 2 {
		t.Errorf("malformed for time: %v, want 2 (years 2200 and 1969)", n)
	}
	if n := counter(t, reg, "pagewatch_ingest_tail_lines_total", "result", "malformed"); n != 4 {
		t.Errorf("malformed lines: %v, want 4", n)
	}
	out := logs.String()
	if got := strings.Count(out, "malformed line skipped"); got != 1 {
		t.Fatalf("%d warnings, want 1 (the rest within the minute at debug)\n%s", got, out)
	}
	// The first junk line starts after 5 lines of the file.
	wantWarning(t, out, "level=WARN", "file="+b.log, "offset="+offsetAfter(b.lines[:5]), `line="\x00\x00garbage\x1b[31m"`)
}

// offsetAfter is the byte offset of the line after lines, in a file that
// holds them from its start.
func offsetAfter(lines [][]byte) string {
	offset := 0
	for _, l := range lines {
		offset += len(l) + 1
	}
	return strconv.Itoa(offset)
}

// wantWarning fails t unless the log out holds each of wants.
func wantWarning(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("the warning lacks %s:\n%s", want, out)
		}
	}
}

// A line past max_line_bytes is skipped whether it was written in one
// write or in two: it was counted when whole in one read, and skipped
// when it straddled two.
func TestLineTooLongWhateverItsWrites(t *testing.T) {
	for _, split := range []bool{false, true} {
		b := setup(t)
		b.cfg.MaxLineBytes = 1024
		reg := prometheus.NewRegistry()
		stop, _ := b.startWith(t, reg)

		// A real line, its referrer made 3 KB long: parseable, too long.
		long := strings.Replace(string(b.lines[0]), `"http://`, `"http://`+strings.Repeat("r", 3000), 1)
		if len(long) < 3000 {
			t.Fatalf("the line has no referrer to lengthen: %s", b.lines[0])
		}
		appendLines(t, b.log, b.lines[:1])
		if split {
			appendRaw(t, b.log, long[:1500])
			time.Sleep(300 * time.Millisecond)
			appendRaw(t, b.log, long[1500:]+"\n")
		} else {
			appendRaw(t, b.log, long+"\n")
		}
		appendLines(t, b.log, b.lines[1:2])
		b.waitHits(t, 2)
		if n := counter(t, reg, "pagewatch_ingest_tail_malformed_lines_total", "reason", "too_long"); n != 1 {
			t.Errorf("written in two: %t; too_long = %v, want 1", split, n)
		}
		stop()
	}
}

func appendRaw(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// A line dated ahead of the tailer's clock is a view all the same: it is
// published and counted, at its own time, and reported (counted, and
// logged at warning once a minute, naming its file, offset and how far
// ahead); one a minute ahead is a clock's drift, not reported.
func TestLinesDatedAheadAreCountedAndReported(t *testing.T) {
	b := setup(t)
	logs := b.captureLogs(t, slog.LevelInfo)
	reg := prometheus.NewRegistry()
	b.startWith(t, reg)

	good := string(b.lines[0])
	open, end := strings.Index(good, "["), strings.Index(good, "]")
	if open < 0 || end < open {
		t.Fatalf("no date in %q", good)
	}
	dated := func(at time.Time) []byte {
		return []byte(good[:open+1] + at.Format("02/Jan/2006:15:04:05 -0700") + good[end:])
	}
	now := time.Now()
	ahead := [][]byte{dated(now.Add(2 * time.Hour)), dated(now.Add(3 * time.Hour)), dated(time.Date(2099, 5, 17, 10, 0, 0, 0, time.UTC))}
	appendLines(t, b.log, b.lines[:3])
	appendLines(t, b.log, ahead)
	appendLines(t, b.log, [][]byte{dated(now.Add(time.Minute))})
	appendLines(t, b.log, b.lines[3:6])
	b.waitHits(t, 10)
	if n := counter(t, reg, "pagewatch_ingest_tail_lines_total", "result", "hit"); n != 10 {
		t.Errorf("hits published: %v, want all 10 lines", n)
	}
	if n := counter(t, reg, "pagewatch_ingest_tail_lines_dated_ahead_total", "", ""); n != 3 {
		t.Errorf("lines dated ahead: %v, want 3 (2 h, 3 h and 2099; not the one a minute ahead)", n)
	}
	out := logs.String()
	if got := strings.Count(out, "line dated ahead"); got != 1 {
		t.Fatalf("%d warnings, want 1 (the rest within the minute counted only)\n%s", got, out)
	}
	wantWarning(t, out, "level=WARN", "file="+b.log, "offset="+offsetAfter(b.lines[:3]))
	// The line's date has whole seconds, the clock read after it more.
	if !regexp.MustCompile(`ahead=(2h0m0s|1h59m5\ds)`).MatchString(out) {
		t.Errorf("the warning does not say the line is 2 hours ahead:\n%s", out)
	}
}
