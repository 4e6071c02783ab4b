package logformat

import (
	"errors"
	"testing"
	"time"
)

const firstLine = `83.149.9.216 - - [17/May/2015:10:05:03 +0000] "GET /presentations/logstash-monitorama-2013/images/kibana-search.png HTTP/1.1" 200 203023 "http://semicomplete.com/presentations/logstash-monitorama-2013/" "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_9_1) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/32.0.1700.77 Safari/537.36"`

// want lists the fields a test cares about; zero values are compared too,
// except Time, which is only checked when set.
type want struct {
	client, ident, user            string
	time                           time.Time
	request, method, target, proto string
	status                         int
	bytes                          int64
	referer, ua                    string
}

func check(t *testing.T, line string, w want) {
	t.Helper()
	var e Entry
	if err := Parse([]byte(line), &e); err != nil {
		t.Fatalf("Parse(%q): %v", line, err)
	}
	got := want{string(e.Client), string(e.Ident), string(e.User), e.Time,
		string(e.Request), string(e.Method), string(e.Target), string(e.Proto),
		e.Status, e.Bytes, string(e.Referer), string(e.UserAgent)}
	if w.time.IsZero() {
		got.time = time.Time{}
	}
	if got != w {
		t.Errorf("Parse(%q)\n got %+v\nwant %+v", line, got, w)
	}
	if !w.time.IsZero() && e.Time.Location() != time.UTC {
		t.Errorf("Time location = %v, want UTC", e.Time.Location())
	}
}

// firstWant is firstLine, the first line of the real log, split by hand.
var firstWant = want{
	client: "83.149.9.216", ident: "-", user: "-",
	time:    time.Date(2015, 5, 17, 10, 5, 3, 0, time.UTC),
	request: "GET /presentations/logstash-monitorama-2013/images/kibana-search.png HTTP/1.1",
	method:  "GET", target: "/presentations/logstash-monitorama-2013/images/kibana-search.png", proto: "HTTP/1.1",
	status: 200, bytes: 203023,
	referer: "http://semicomplete.com/presentations/logstash-monitorama-2013/",
	ua:      "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_9_1) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/32.0.1700.77 Safari/537.36",
}

func TestParseCombined(t *testing.T) { check(t, firstLine, firstWant) }

func TestParseCases(t *testing.T) {
	ts := time.Date(2015, 5, 17, 10, 5, 3, 0, time.UTC)
	base := func(w want) want {
		if w.client == "" {
			w.client = "1.2.3.4"
		}
		w.ident, w.time = "-", ts
		if w.user == "" {
			w.user = "-"
		}
		return w
	}
	const pre = `1.2.3.4 - - [17/May/2015:10:05:03 +0000] `
	tests := []struct {
		name string
		line string
		want want
	}{
		{"common format", pre + `"GET /a HTTP/1.0" 200 5`,
			want{request: "GET /a HTTP/1.0", method: "GET", target: "/a", proto: "HTTP/1.0", status: 200, bytes: 5}},
		{"bytes dash", pre + `"HEAD / HTTP/1.1" 304 - "-" "-"`,
			want{request: "HEAD / HTTP/1.1", method: "HEAD", target: "/", proto: "HTTP/1.1", status: 304, bytes: -1, referer: "-", ua: "-"}},
		{"bytes zero", pre + `"GET / HTTP/1.1" 204 0 "-" "-"`,
			want{request: "GET / HTTP/1.1", method: "GET", target: "/", proto: "HTTP/1.1", status: 204, bytes: 0, referer: "-", ua: "-"}},
		{"escaped quote and backslash", pre + `"GET /q?x=\"a\"&b=\\ HTTP/1.1" 200 1 "http://r/\"x\" y" "UA \"quoted\" \\"`,
			want{request: `GET /q?x=\"a\"&b=\\ HTTP/1.1`, method: "GET", target: `/q?x=\"a\"&b=\\`, proto: "HTTP/1.1",
				status: 200, bytes: 1, referer: `http://r/\"x\" y`, ua: `UA \"quoted\" \\`}},
		{"escaped quote followed by space", pre + `"GET / HTTP/1.1" 200 1 "-" "say \" hi"`,
			want{request: "GET / HTTP/1.1", method: "GET", target: "/", proto: "HTTP/1.1", status: 200, bytes: 1, referer: "-", ua: `say \" hi`}},
		{"hex escapes kept", pre + `"GET /\xc3\xa9 HTTP/1.1" 200 1 "-" "\x00ua"`,
			want{request: `GET /\xc3\xa9 HTTP/1.1`, method: "GET", target: `/\xc3\xa9`, proto: "HTTP/1.1", status: 200, bytes: 1, referer: "-", ua: `\x00ua`}},
		{"ipv6 client", `2001:db8::1 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/2.0" 200 9 "-" "curl/8"`,
			want{client: "2001:db8::1", request: "GET / HTTP/2.0", method: "GET", target: "/", proto: "HTTP/2.0", status: 200, bytes: 9, referer: "-", ua: "curl/8"}},
		{"preconnect dash request", pre + `"-" 408 0 "-" "-"`,
			want{request: "-", status: 408, bytes: 0, referer: "-", ua: "-"}},
		{"tls junk request", pre + `"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" 400 0 "-" "-"`,
			want{request: `\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03`, status: 400, bytes: 0, referer: "-", ua: "-"}},
		{"raw binary junk request", pre + "\"\x16\x03\x01 \xfc\x03\" 400 0 \"-\" \"-\"",
			want{request: "\x16\x03\x01 \xfc\x03", status: 400, bytes: 0, referer: "-", ua: "-"}},
		{"space in target", pre + `"GET /my file.html HTTP/1.1" 404 10 "-" "-"`,
			want{request: "GET /my file.html HTTP/1.1", method: "GET", target: "/my file.html", proto: "HTTP/1.1", status: 404, bytes: 10, referer: "-", ua: "-"}},
		{"missing proto", pre + `"GET /foo" 400 10 "-" "-"`,
			want{request: "GET /foo", method: "GET", target: "/foo", status: 400, bytes: 10, referer: "-", ua: "-"}},
		{"space in target without proto", pre + `"GET /a b" 400 10 "-" "-"`,
			want{request: "GET /a b", method: "GET", target: "/a b", status: 400, bytes: 10, referer: "-", ua: "-"}},
		{"invalid utf8", "1.2.3.4 - \xff\xfe [17/May/2015:10:05:03 +0000] \"GET /\xc3\x28 HTTP/1.1\" 200 1 \"http://\xe4\xe5/\" \"\xf0\x28\x8c\x28\"",
			want{user: "\xff\xfe", request: "GET /\xc3\x28 HTTP/1.1", method: "GET", target: "/\xc3\x28", proto: "HTTP/1.1", status: 200, bytes: 1, referer: "http://\xe4\xe5/", ua: "\xf0\x28\x8c\x28"}},
		{"user with space", `1.2.3.4 - john smith [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1`,
			want{user: "john smith", request: "GET / HTTP/1.1", method: "GET", target: "/", proto: "HTTP/1.1", status: 200, bytes: 1}},
		{"unterminated user agent", pre + `"GET / HTTP/1.1" 200 235 "-" "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html`,
			want{request: "GET / HTTP/1.1", method: "GET", target: "/", proto: "HTTP/1.1", status: 200, bytes: 235, referer: "-", ua: "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html"}},
		{"empty unterminated user agent", pre + `"GET / HTTP/1.1" 200 235 "-" "`,
			want{request: "GET / HTTP/1.1", method: "GET", target: "/", proto: "HTTP/1.1", status: 200, bytes: 235, referer: "-"}},
		{"trailing CR", pre + "\"GET / HTTP/1.1\" 200 1 \"-\" \"ua\"\r",
			want{request: "GET / HTTP/1.1", method: "GET", target: "/", proto: "HTTP/1.1", status: 200, bytes: 1, referer: "-", ua: "ua"}},
		{"trailing CRLF", pre + "\"GET / HTTP/1.1\" 200 1\r\n",
			want{request: "GET / HTTP/1.1", method: "GET", target: "/", proto: "HTTP/1.1", status: 200, bytes: 1}},
		{"extra nginx fields", pre + `"GET / HTTP/1.1" 200 1 "-" "ua" "10.0.0.1" 0.004`,
			want{request: "GET / HTTP/1.1", method: "GET", target: "/", proto: "HTTP/1.1", status: 200, bytes: 1, referer: "-", ua: "ua"}},
		{"unescaped quote inside word", pre + `"GET /a"b HTTP/1.1" 200 1 "-" "ua"`,
			want{request: `GET /a"b HTTP/1.1`, method: "GET", target: `/a"b`, proto: "HTTP/1.1", status: 200, bytes: 1, referer: "-", ua: "ua"}},
		{"empty quoted fields", pre + `"" 400 0 "" ""`,
			want{status: 400}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, tt.line, base(tt.want)) })
	}
}

func TestParseTimeZones(t *testing.T) {
	const layout = "02/Jan/2006:15:04:05 -0700"
	for _, s := range []string{
		"17/May/2015:10:05:03 +0000",
		"17/May/2015:10:05:03 -0700",
		"17/May/2015:10:05:03 +0530",
		"01/Jan/2016:00:30:00 +0100", // crosses back into 2015 in UTC
		"31/Dec/2015:23:59:59 -1200", // crosses into 2016 in UTC
		"29/Feb/2016:12:00:00 +1400",
		"29/Feb/2000:12:00:00 -0930",
		"01/Mar/1900:00:00:00 +0000",
		"01/Jan/1970:00:00:00 +0000",
		"31/Dec/1969:23:59:59 +0000",
		"15/Oct/1582:00:00:00 +0000",
		"01/Jan/0001:00:00:00 +0000",
		"31/Dec/9999:23:59:59 -2359",
	} {
		want, err := time.Parse(layout, s)
		if err != nil {
			t.Fatal(err)
		}
		line := "1.2.3.4 - - [" + s + `] "GET / HTTP/1.1" 200 1`
		var e Entry
		if err := Parse([]byte(line), &e); err != nil {
			t.Errorf("%s: %v", s, err)
			continue
		}
		if !e.Time.Equal(want) || e.Time.Location() != time.UTC {
			t.Errorf("%s: got %v, want %v", s, e.Time, want.UTC())
		}
	}
}

// TestParseTimeEveryDay compares against time.Parse across leap years and
// century boundaries, where a hand-written calendar is most likely wrong.
func TestParseTimeEveryDay(t *testing.T) {
	const layout = "02/Jan/2006:15:04:05 -0700"
	zone := time.FixedZone("", -(3*3600 + 30*60))
	var e Entry
	for d := time.Date(1896, 1, 1, 23, 59, 58, 0, zone); d.Year() < 2104; d = d.AddDate(0, 0, 1) {
		s := d.Format(layout)
		if err := Parse([]byte("h - - ["+s+`] "-" 200 -`), &e); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if !e.Time.Equal(d) {
			t.Fatalf("%s: got %v, want %v", s, e.Time, d.UTC())
		}
	}
}

func TestParseErrors(t *testing.T) {
	const pre = `1.2.3.4 - - [17/May/2015:10:05:03 +0000] `
	long := make([]byte, MaxLineLen+1)
	for i := range long {
		long[i] = 'a'
	}
	tests := []struct {
		line   string
		reason string
		offset int
	}{
		{"", ReasonEmpty, 0},
		{"\r", ReasonEmpty, 0},
		{string(long), ReasonTooLong, MaxLineLen},
		{" - - [17/May/2015:10:05:03 +0000] \"-\" 200 1", ReasonClient, 0},
		{"1.2.3.4", ReasonClient, 0},
		{"1.2\x01.3.4 - - [17/May/2015:10:05:03 +0000] \"-\" 200 1", ReasonClient, 3},
		{"1.2.3.4 -", ReasonIdent, 8},
		{"1.2.3.4 - -", ReasonUser, 10},
		{"1.2.3.4 - - [17/May/2015:10:05:03 +0000", ReasonTime, 13},
		{"1.2.3.4 - - [17/Foo/2015:10:05:03 +0000] \"-\" 200 1", ReasonTime, 13},
		{"1.2.3.4 - - [17/may/2015:10:05:03 +0000] \"-\" 200 1", ReasonTime, 13},
		{"1.2.3.4 - - [32/May/2015:10:05:03 +0000] \"-\" 200 1", ReasonTime, 13},
		{"1.2.3.4 - - [00/May/2015:10:05:03 +0000] \"-\" 200 1", ReasonTime, 13},
		{"1.2.3.4 - - [31/Apr/2015:10:05:03 +0000] \"-\" 200 1", ReasonTime, 13},
		{"1.2.3.4 - - [29/Feb/2015:10:05:03 +0000] \"-\" 200 1", ReasonTime, 13},
		{"1.2.3.4 - - [29/Feb/1900:10:05:03 +0000] \"-\" 200 1", ReasonTime, 13},
		{"1.2.3.4 - - [17/May/2015:24:05:03 +0000] \"-\" 200 1", ReasonTime, 13},
		{"1.2.3.4 - - [17/May/2015:10:60:03 +0000] \"-\" 200 1", ReasonTime, 13},
		{"1.2.3.4 - - [17/May/2015:10:05:03 0000] \"-\" 200 1", ReasonTime, 13},
		{"1.2.3.4 - - [17/May/2015:10:05:03 *0000] \"-\" 200 1", ReasonTime, 13},
		{"1.2.3.4 - - [17/May/2015:10:05:03 +00x0] \"-\" 200 1", ReasonTime, 13},
		{"1.2.3.4 - - [17/May/0000:10:05:03 +0000] \"-\" 200 1", ReasonTime, 13},
		{"1.2.3.4 - - [1/May/2015:10:05:03 +0000] \"-\" 200 1", ReasonTime, 13},
		{pre[:len(pre)-1], ReasonRequest, 40},
		{pre + "GET / 200 1", ReasonRequest, 40},
		{pre + `"GET / HTTP/1.1`, ReasonQuote, 41},
		{pre + `"GET / HTTP/1.1\"`, ReasonQuote, 41},
		{pre + `"-"`, ReasonStatus, 44},
		{pre + `"-" 200`, ReasonStatus, 44},
		{pre + `"-" - 1`, ReasonStatus, 44},
		{pre + `"-" 2x0 1`, ReasonStatus, 45},
		{pre + `"-" 2000 1`, ReasonStatus, 44},
		{pre + `"-" 200 `, ReasonBytes, 49},
		{pre + `"-" 200 12a`, ReasonBytes, 49},
		{pre + `"-" 200 -1`, ReasonBytes, 49},
		{pre + `"-" 200 1234567890123456789`, ReasonBytes, 49},
		{pre + `"-" 200 1 `, ReasonReferer, 50},
		{pre + `"-" 200 1 -`, ReasonReferer, 50},
		{pre + `"-" 200 1 "http://x/`, ReasonQuote, 51},
		{pre + `"-" 200 1 "-"`, ReasonUserAgent, 54},
		{pre + `"-" 200 1 "-" ua`, ReasonUserAgent, 54},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.reason] = true
		var e Entry
		err := Parse([]byte(tt.line), &e)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%.60q) = %v, want *ParseError %q", tt.line, err, tt.reason)
			continue
		}
		if pe.Reason != tt.reason || pe.Offset != tt.offset {
			t.Errorf("Parse(%.60q) = %q at %d, want %q at %d", tt.line, pe.Reason, pe.Offset, tt.reason, tt.offset)
		}
		if pe.Error() == "" {
			t.Error("empty error message")
		}
	}
	// Reasons() is what callers pre-register as metric labels, so it must
	// match exactly what Parse and the other parsers can return; theirs
	// are tested in TestParserErrors.
	for _, r := range Reasons() {
		if !seen[r] && !otherParsersOnly[r] {
			t.Errorf("reason %q in Reasons() is never tested", r)
		}
		delete(seen, r)
	}
	for r := range seen {
		t.Errorf("reason %q missing from Reasons()", r)
	}
}

func TestParseResetsEntry(t *testing.T) {
	var e Entry
	if err := Parse([]byte(firstLine), &e); err != nil {
		t.Fatal(err)
	}
	if err := Parse([]byte(`1.2.3.4 - - [17/May/2015:10:05:03 +0000] "-" 200 1`), &e); err != nil {
		t.Fatal(err)
	}
	if e.Referer != nil || e.UserAgent != nil || e.Method != nil || e.Proto != nil {
		t.Errorf("fields left over from the previous line: %+v", e)
	}
}

func TestParseAllocs(t *testing.T) {
	line := []byte(firstLine)
	var e Entry
	allocs := testing.AllocsPerRun(1000, func() {
		if err := Parse(line, &e); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Parse allocates %v times per line, want 0", allocs)
	}
}
