package logformat

import (
	"strconv"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/realdata"
)

func realLines(tb testing.TB) [][]byte {
	tb.Helper()
	return realdata.Lines(tb, realdata.ApacheLog)
}

// TestRealLog parses every line of a real Apache log. The expected totals
// were computed independently with awk:
//
//	awk '{if($10!="-")s+=$10; c[$9]++; g[$6]++} END{printf "%.0f %d %d\n", s, c["200"], g["\"GET"]}'
func TestRealLog(t *testing.T) {
	lines := realLines(t)
	if len(lines) != 10000 {
		t.Fatalf("got %d lines, want 10000", len(lines))
	}
	check(t, string(lines[0]), firstWant)
	var (
		e                   Entry
		total               int64
		ok200, gets, dashes int
		unterminatedUA      int
		minTime, maxTime    time.Time
	)
	for i, line := range lines {
		if err := Parse(line, &e); err != nil {
			t.Fatalf("line %d: %v\n%s", i+1, err, line)
		}
		if e.Bytes >= 0 {
			total += e.Bytes
		} else {
			dashes++
		}
		if e.Status == 200 {
			ok200++
		}
		if string(e.Method) == "GET" {
			gets++
		}
		if len(line) > 0 && line[len(line)-1] != '"' {
			unterminatedUA++
		}
		if i == 0 || e.Time.Before(minTime) {
			minTime = e.Time
		}
		if e.Time.After(maxTime) {
			maxTime = e.Time
		}
	}
	if total != 2747282740 {
		t.Errorf("total bytes = %d, want 2747282740", total)
	}
	if dashes != 669 {
		t.Errorf("bytes \"-\" count = %d, want 669", dashes)
	}
	if ok200 != 9126 {
		t.Errorf("status 200 count = %d, want 9126", ok200)
	}
	if gets != 9952 {
		t.Errorf("GET count = %d, want 9952", gets)
	}
	if unterminatedUA != 1 {
		t.Errorf("lines with an unterminated user agent = %d, want 1 (line 8899)", unterminatedUA)
	}
	if minTime.Day() != 17 || maxTime.Day() != 20 || minTime.Month() != time.May {
		t.Errorf("time range %v .. %v, want 17..20 May 2015", minTime, maxTime)
	}

	// Line 8899 is cut short inside its user agent.
	if err := Parse(lines[8898], &e); err != nil {
		t.Fatal(err)
	}
	if got, want := string(e.UserAgent), "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html"; got != want {
		t.Errorf("line 8899 user agent = %q, want %q", got, want)
	}
	if e.Status != 200 || e.Bytes != 235 || string(e.Target) != "/scripts/grok-py-test/configlib.py" {
		t.Errorf("line 8899 = %+v", e)
	}

	// Line 5851 has a cp1251 referer that Apache \x-escaped; it stays escaped.
	if err := Parse(lines[5850], &e); err != nil {
		t.Fatal(err)
	}
	if got, want := string(e.Referer), `http://\xe4\xe5\xe3\xf2\xff\xf0\xed\xee\xe5-\xec\xfb\xeb\xee.\xf0\xf4/`; got != want {
		t.Errorf("line 5851 referer = %q, want %q", got, want)
	}
}

func BenchmarkParse(b *testing.B) {
	lines := realLines(b)
	var size int64
	for _, l := range lines {
		size += int64(len(l)) + 1 // count the newline, as a reader would
	}
	var e Entry
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, l := range lines {
			if err := Parse(l, &e); err != nil {
				b.Fatal(err)
			}
		}
		n++
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(n*len(lines))/sec, "lines/s")
	b.ReportMetric(float64(int64(n)*size)/sec/1e6, "MB/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*len(lines)), "ns/line")
}

// benchParser is BenchmarkParse for any Parser, on lines made by mk from
// the real log's lines.
func benchParser(b *testing.B, p Parser, mk func([]byte) []byte) {
	lines := realLines(b)
	// The made lines go end to end in one buffer, as a reader holds them,
	// rather than each in its own allocation scattered over the heap.
	var buf []byte
	ends := make([]int, len(lines))
	for i, l := range lines {
		buf = append(append(buf, mk(l)...), '\n')
		ends[i] = len(buf) - 1
	}
	start := 0
	for i, end := range ends {
		lines[i] = buf[start:end:end]
		start = end + 1
	}
	size := int64(len(buf))
	var e Entry
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, l := range lines {
			if err := p.Parse(l, &e); err != nil {
				b.Fatal(err)
			}
		}
		n++
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(n*len(lines))/sec, "lines/s")
	b.ReportMetric(float64(int64(n)*size)/sec/1e6, "MB/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*len(lines)), "ns/line")
}

func same(l []byte) []byte { return l }

// BenchmarkCompiledCombined is nginx's combined log_format, compiled.
func BenchmarkCompiledCombined(b *testing.B) {
	benchParser(b, mustCompile(b, KindNginx, NginxCombined), same)
}

// BenchmarkCompiledApacheCombined is Apache's combined LogFormat, compiled.
func BenchmarkCompiledApacheCombined(b *testing.B) {
	benchParser(b, mustCompile(b, KindApache, ApacheCombined), same)
}

func BenchmarkVhostCombined(b *testing.B) {
	benchParser(b, mustPreset(b, "vhost_combined"), func(l []byte) []byte {
		return append([]byte("blog.example.com:80 "), l...)
	})
}

// BenchmarkJSON parses the real log rewritten as nginx escape=json lines.
func BenchmarkJSON(b *testing.B) {
	benchParser(b, mustPreset(b, "json"), func(l []byte) []byte {
		var e Entry
		if err := Parse(l, &e); err != nil {
			b.Fatal(err)
		}
		q := func(s []byte) string { return strconv.Quote(string(s)) }
		return []byte(`{"remote_addr":` + q(e.Client) + `,"remote_user":` + q(e.User) +
			`,"time_local":"` + e.Time.Format("02/Jan/2006:15:04:05 -0700") + `","request":` + q(e.Request) +
			`,"status":"` + strconv.Itoa(e.Status) + `","body_bytes_sent":"` + strconv.FormatInt(max(e.Bytes, 0), 10) +
			`","http_referer":` + q(e.Referer) + `,"http_user_agent":` + q(e.UserAgent) + `,"request_time":"0.004"}`)
	})
}
