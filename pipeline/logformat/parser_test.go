package logformat

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// otherParsersOnly are the reasons Parse never gives; TestParserErrors
// covers them.
var otherParsersOnly = map[string]bool{ReasonVhost: true, ReasonField: true, ReasonJSON: true}

func mustCompile(t testing.TB, kind, format string) Parser {
	t.Helper()
	p, err := Compile(kind, format)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustPreset(t testing.TB, name string) Parser {
	t.Helper()
	p, err := Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// got flattens an Entry into a want, plus its vhost.
func got(e *Entry) (want, string) {
	return want{string(e.Client), string(e.Ident), string(e.User), e.Time,
		string(e.Request), string(e.Method), string(e.Target), string(e.Proto),
		e.Status, e.Bytes, string(e.Referer), string(e.UserAgent)}, string(e.Vhost)
}

type parserCase struct {
	name  string
	line  string
	want  want
	vhost string
}

func runCases(t *testing.T, p Parser, cases []parserCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			var e Entry
			if err := p.Parse([]byte(tt.line), &e); err != nil {
				t.Fatalf("Parse(%.200q): %v", tt.line, err)
			}
			g, vh := got(&e)
			if tt.want.time.IsZero() {
				g.time = time.Time{}
			} else if e.Time.Location() != time.UTC {
				t.Errorf("Time location = %v, want UTC", e.Time.Location())
			}
			if g != tt.want || vh != tt.vhost {
				t.Errorf("Parse(%.200q)\n got %+v vhost %q\nwant %+v vhost %q", tt.line, g, vh, tt.want, tt.vhost)
			}
		})
	}
}

var ts = time.Date(2015, 5, 17, 10, 5, 3, 0, time.UTC)

// combinedCases are the real-world cases of issue #3 in the combined
// format, which every parser of combined lines must split alike.
var combinedCases = []parserCase{
	{"first real line", firstLine, firstWant, ""},
	{"bytes dash", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "HEAD / HTTP/1.1" 304 - "-" "-"`,
		want{client: "1.2.3.4", ident: "-", user: "-", time: ts, request: "HEAD / HTTP/1.1", method: "HEAD", target: "/", proto: "HTTP/1.1", status: 304, bytes: -1, referer: "-", ua: "-"}, ""},
	{"bytes zero", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 204 0 "-" "-"`,
		want{client: "1.2.3.4", ident: "-", user: "-", time: ts, request: "GET / HTTP/1.1", method: "GET", target: "/", proto: "HTTP/1.1", status: 204, referer: "-", ua: "-"}, ""},
	{"apache escapes", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /q?x=\"a\"&b=\\ HTTP/1.1" 200 1 "http://r/\"x\" y" "UA \"quoted\" \\"`,
		want{client: "1.2.3.4", ident: "-", user: "-", time: ts, request: `GET /q?x=\"a\"&b=\\ HTTP/1.1`, method: "GET", target: `/q?x=\"a\"&b=\\`, proto: "HTTP/1.1",
			status: 200, bytes: 1, referer: `http://r/\"x\" y`, ua: `UA \"quoted\" \\`}, ""},
	{"hex escapes kept", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /\xc3\xa9 HTTP/1.1" 200 1 "-" "\x00ua"`,
		want{client: "1.2.3.4", ident: "-", user: "-", time: ts, request: `GET /\xc3\xa9 HTTP/1.1`, method: "GET", target: `/\xc3\xa9`, proto: "HTTP/1.1", status: 200, bytes: 1, referer: "-", ua: `\x00ua`}, ""},
	{"ipv6 client", `2001:db8::1 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/2.0" 200 9 "-" "curl/8"`,
		want{client: "2001:db8::1", ident: "-", user: "-", time: ts, request: "GET / HTTP/2.0", method: "GET", target: "/", proto: "HTTP/2.0", status: 200, bytes: 9, referer: "-", ua: "curl/8"}, ""},
	{"dash request", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "-" 408 0 "-" "-"`,
		want{client: "1.2.3.4", ident: "-", user: "-", time: ts, request: "-", status: 408, referer: "-", ua: "-"}, ""},
	{"tls handshake escaped", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" 400 0 "-" "-"`,
		want{client: "1.2.3.4", ident: "-", user: "-", time: ts, request: `\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03`, status: 400, referer: "-", ua: "-"}, ""},
	{"tls handshake raw", "1.2.3.4 - - [17/May/2015:10:05:03 +0000] \"\x16\x03\x01 \xfc\x03\" 400 0 \"-\" \"-\"",
		want{client: "1.2.3.4", ident: "-", user: "-", time: ts, request: "\x16\x03\x01 \xfc\x03", status: 400, referer: "-", ua: "-"}, ""},
	{"invalid utf8", "1.2.3.4 - \xff\xfe [17/May/2015:10:05:03 +0000] \"GET /\xc3\x28 HTTP/1.1\" 200 1 \"http://\xe4\xe5/\" \"\xf0\x28\x8c\x28\"",
		want{client: "1.2.3.4", ident: "-", user: "\xff\xfe", time: ts, request: "GET /\xc3\x28 HTTP/1.1", method: "GET", target: "/\xc3\x28", proto: "HTTP/1.1", status: 200, bytes: 1, referer: "http://\xe4\xe5/", ua: "\xf0\x28\x8c\x28"}, ""},
	{"user with space", `1.2.3.4 - john smith [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1 "-" "-"`,
		want{client: "1.2.3.4", ident: "-", user: "john smith", time: ts, request: "GET / HTTP/1.1", method: "GET", target: "/", proto: "HTTP/1.1", status: 200, bytes: 1, referer: "-", ua: "-"}, ""},
	{"missing closing quote", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 235 "-" "Mozilla/5.0 (compatible; Googlebot/2.1`,
		want{client: "1.2.3.4", ident: "-", user: "-", time: ts, request: "GET / HTTP/1.1", method: "GET", target: "/", proto: "HTTP/1.1", status: 200, bytes: 235, referer: "-", ua: "Mozilla/5.0 (compatible; Googlebot/2.1"}, ""},
	{"trailing CRLF and appended field", "1.2.3.4 - - [17/May/2015:10:05:03 +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"ua\" 0.004\r\n",
		want{client: "1.2.3.4", ident: "-", user: "-", time: ts, request: "GET / HTTP/1.1", method: "GET", target: "/", proto: "HTTP/1.1", status: 200, bytes: 1, referer: "-", ua: "ua"}, ""},
	{"very long target", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /` + strings.Repeat("a", 60000) + ` HTTP/1.1" 414 0 "-" "-"`,
		want{client: "1.2.3.4", ident: "-", user: "-", time: ts, request: "GET /" + strings.Repeat("a", 60000) + " HTTP/1.1", method: "GET", target: "/" + strings.Repeat("a", 60000), proto: "HTTP/1.1", status: 414, referer: "-", ua: "-"}, ""},
}

func TestPresetCombined(t *testing.T) {
	for _, name := range []string{"combined", "nginx"} {
		t.Run(name, func(t *testing.T) { runCases(t, mustPreset(t, name), combinedCases) })
	}
}

func TestCompiledCombined(t *testing.T) {
	t.Run("nginx", func(t *testing.T) { runCases(t, mustCompile(t, KindNginx, NginxCombined), combinedCases) })
	t.Run("apache", func(t *testing.T) { runCases(t, mustCompile(t, KindApache, ApacheCombined), combinedCases) })
	t.Run("apache escaped quotes", func(t *testing.T) {
		runCases(t, mustCompile(t, KindApache, `%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-agent}i\"`), combinedCases)
	})
}

func TestPresetCommon(t *testing.T) {
	line := `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /a HTTP/1.0" 200 -`
	w := want{client: "1.2.3.4", ident: "-", user: "-", time: ts, request: "GET /a HTTP/1.0", method: "GET", target: "/a", proto: "HTTP/1.0", status: 200, bytes: -1}
	runCases(t, mustPreset(t, "common"), []parserCase{{"common", line, w, ""}})
	runCases(t, mustCompile(t, KindApache, ApacheCommon), []parserCase{{"compiled", line, w, ""}})
}

func TestPresetVhostCombined(t *testing.T) {
	p := mustPreset(t, "vhost_combined")
	var cases []parserCase
	for _, c := range combinedCases {
		c.line = "www.example.com:443 " + c.line
		c.vhost = "www.example.com"
		cases = append(cases, c)
	}
	runCases(t, p, cases)
}

func TestCompileNginx(t *testing.T) {
	runCases(t, mustCompile(t, KindNginx,
		`$host $remote_addr - $remote_user [$time_iso8601] "$request_method $uri$is_args$args $server_protocol" $status $bytes_sent $request_time "$http_referer" "$http_user_agent" "$http_x_forwarded_for"`),
		[]parserCase{
			{"split request and skipped fields", `example.org 2001:db8::1 - - [2015-05-17T12:05:03+02:00] "GET /a?b=c HTTP/2.0" 200 10 0.004 "-" "ua" "10.0.0.1, 10.0.0.2"`,
				want{client: "2001:db8::1", ident: "-", user: "-", time: ts, method: "GET", target: "/a?b=c", proto: "HTTP/2.0", status: 200, bytes: 10, referer: "-", ua: "ua"}, "example.org"},
			{"no query", `example.org 1.2.3.4 - - [2015-05-17T10:05:03Z] "GET /a HTTP/1.1" 404 0 0.000 "-" "-" "-"`,
				want{client: "1.2.3.4", ident: "-", user: "-", time: ts, method: "GET", target: "/a", proto: "HTTP/1.1", status: 404, referer: "-", ua: "-"}, "example.org"},
		})
	runCases(t, mustCompile(t, KindNginx, `${msec} ${server_name}: "$request" $status`),
		[]parserCase{
			{"msec and braces", `1431857103.250 www: "GET / HTTP/1.1" 200`,
				want{time: ts.Add(250 * time.Millisecond), request: "GET / HTTP/1.1", method: "GET", target: "/", proto: "HTTP/1.1", status: 200}, "www"},
		})
}

func TestCompileApache(t *testing.T) {
	runCases(t, mustCompile(t, KindApache,
		`%a %{Host}i %D %t "%m %U%q %H" %>s %B %!200,304{Referer}i "%{User-Agent}i" %% %{sec}t`),
		[]parserCase{
			{"split request and skipped fields", `::1 example.org 1234 [17/May/2015:12:05:03 +0200] "GET /a?x=1 HTTP/1.1" 200 0 - "ua \"x\"" % 1431857103`,
				want{client: "::1", time: ts, method: "GET", target: "/a?x=1", proto: "HTTP/1.1", status: 200, referer: "-", ua: `ua \"x\"`}, "example.org"},
		})
}

func TestCompileErrors(t *testing.T) {
	for _, tt := range []struct{ kind, format, want string }{
		{"apache", `%h %Z %t "%r"`, `"%Z" at byte 3`},
		{"apache", `%h %{Referer`, `"%{Referer" at byte 3`},
		{"apache", `%h %t "%r" %`, `"%" at byte 11`},
		{"apache", `%h %{%Y}t "%r"`, `"%{%Y}t" at byte 3`},
		{"apache", `%h%u %t "%r"`, `"%u" at byte 2: follows %h`},
		{"apache", `%h %t`, "logs neither the request"},
		{"apache", `%h "%r"`, "logs no time"},
		{"apache", `%h %{}i %t "%r"`, `"%{}i" at byte 3`},
		{"nginx", `$remote_addr [$time_local] "$request" $`, `"$" at byte 38`},
		{"nginx", `$remote_addr [${time_local] "$request"`, `"${" at byte 14`},
		{"nginx", `$remote_addr$remote_user [$time_local] "$request"`, `"$remote_user" at byte 12`},
		{"nginx", `$args [$time_local] "$request"`, `"$args" at byte 0`},
		{"nginx", ``, "has no fields"},
		{"json", `{"t":"$time_local","r":"$request_method $request_uri"}`, `key "r" mixes $request_method`},
		{"json", `{"t":"$time_local"`, `at byte 18`},
		{"json", `{"t":"$time_local"}`, "no key holds $request"},
		{"json", `["$time_local"]`, "one JSON object"},
		{"xml", `x`, `unknown format kind "xml"`},
	} {
		_, err := Compile(tt.kind, tt.format)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Compile(%s, %q) = %v, want an error containing %q", tt.kind, tt.format, err, tt.want)
		}
	}
	if _, err := Preset("w3c"); err == nil || !strings.Contains(err.Error(), "w3c") {
		t.Errorf("Preset(w3c) = %v", err)
	}
}

func TestPresetJSON(t *testing.T) {
	line := `{"time_iso8601":"2015-05-17T10:05:03+00:00","remote_addr":"2001:db8::1","remote_user":"","request":"GET /a\"b HTTP/1.1","status":"200","body_bytes_sent":"0","http_referer":"","http_user_agent":"Mozilla \"x\" \u00e9","host":"example.org","upstream":{"a":[1,"}"]},"request_time":0.004,"x":null}`
	runCases(t, mustPreset(t, "json"), []parserCase{
		{"defaults", line, want{client: "2001:db8::1", time: ts, request: `GET /a\"b HTTP/1.1`, method: "GET", target: `/a\"b`, proto: "HTTP/1.1", status: 200, ua: `Mozilla \"x\" \u00e9`}, "example.org"},
		{"tls junk and numbers", ` { "time_local" : "17/May/2015:10:05:03 +0000" , "request" : "\u0016\u0003\u0001" , "status" : 400 , "bytes_sent" : 7 } `,
			want{time: ts, request: `\u0016\u0003\u0001`, status: 400, bytes: 7}, ""},
	})
	p := mustCompile(t, KindJSON, `{ "ts": "$msec", "ip": "$remote_addr", "m": "$request_method", "u": "$request_uri", "s": $status, "v": "$server_name", "c": "const", "rt": "$request_time" }`)
	runCases(t, p, []parserCase{
		{"template keys", `{"ts":"1431857103.000","ip":"1.2.3.4","m":"GET","u":"/x?y","s":301,"v":"www","c":"const","rt":"0.1"}`,
			want{client: "1.2.3.4", time: ts, method: "GET", target: "/x?y", status: 301}, "www"},
	})
}

// TestParserErrors checks the reasons each parser gives for bad lines,
// including those only these parsers give.
func TestParserErrors(t *testing.T) {
	nginx := mustCompile(t, KindNginx, NginxCombined)
	vhost := mustPreset(t, "vhost_combined")
	custom := mustCompile(t, KindNginx, `$host [$time_local] "$request" $status $request_time;`)
	jsonp := mustPreset(t, "json")
	const pre = `1.2.3.4 - - [17/May/2015:10:05:03 +0000] `
	seen := map[string]bool{}
	for _, tt := range []struct {
		p      Parser
		line   string
		reason string
	}{
		{nginx, "", ReasonEmpty},
		{nginx, strings.Repeat("x", MaxLineLen+1), ReasonTooLong},
		{nginx, ` - - [17/May/2015:10:05:03 +0000] "-" 200 1 "-" "-"`, ReasonClient},
		{nginx, "1.2\x01.3.4 - - [17/May/2015:10:05:03 +0000] \"-\" 200 1 \"-\" \"-\"", ReasonClient},
		{nginx, `1.2.3.4 -  [17/May/2015:10:05:03 +0000] "-" 200 1 "-" "-"`, ReasonUser},
		{nginx, `1.2.3.4 - - [17/May/2015:10:05:03 +0000 "-" 200 1 "-" "-"`, ReasonTime},
		{nginx, pre + `"GET / HTTP/1.1 200 1`, ReasonQuote},
		{nginx, pre + `"-" 20 1 "-" "-"`, ReasonStatus},
		{nginx, pre + `"-" 200 x "-" "-"`, ReasonBytes},
		{nginx, pre + `"-" 200 1 - "-"`, ReasonBytes},
		{nginx, pre + `"-" 200 1 "-"`, ReasonQuote},
		{mustCompile(t, KindApache, `%h %l %u %t "%r" %>s %b`), `1.2.3.4 -`, ReasonIdent},
		{mustCompile(t, KindApache, `%t "%r" %>s %{User-Agent}i|`), `[17/May/2015:10:05:03 +0000] "-" 200 ua`, ReasonUserAgent},
		{mustCompile(t, KindApache, `%t "%r" %>s %{Referer}i.`), `[17/May/2015:10:05:03 +0000] "-" 200 r`, ReasonReferer},
		{mustCompile(t, KindApache, `"%r" %t`), `x [17/May/2015:10:05:03 +0000]`, ReasonRequest},
		{vhost, `:80 ` + firstLine, ReasonVhost},
		{vhost, `example.org ` + firstLine, ReasonVhost},
		{custom, `example.org [17/May/2015:10:05:03 +0000] "-" 200 0.1`, ReasonField},
		{jsonp, `{"status":"200"}`, ReasonTime},
		{jsonp, `{"time_local":"17/May/2015:10:05:03 +0000"}`, ReasonStatus},
		{jsonp, `{"time_local":"17/May/2015:10:05:03 +0000","status":"2000"}`, ReasonStatus},
		{jsonp, `{"time_local":"17/May/2015:10:05:03 +0000","status":"200"`, ReasonJSON},
		{jsonp, `{"time_local":"17/May/2015:10:05:03 +0000","status":"200"} x`, ReasonJSON},
		{jsonp, `not json`, ReasonJSON},
		{jsonp, `{"status":"200","request":"GET /`, ReasonQuote},
	} {
		seen[tt.reason] = true
		var e Entry
		err := tt.p.Parse([]byte(tt.line), &e)
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Reason != tt.reason {
			t.Errorf("Parse(%.70q) = %v, want reason %q", tt.line, err, tt.reason)
		}
	}
	for r := range otherParsersOnly {
		if !seen[r] {
			t.Errorf("reason %q is never tested", r)
		}
	}
}

// TestCompiledMatchesParseOnRealLog checks that the compiled forms of
// combined (nginx's and Apache's definitions, and vhost_combined with a
// vhost put in front) split every real line exactly as Parse does.
func TestCompiledMatchesParseOnRealLog(t *testing.T) {
	lines := realLines(t)
	parsers := map[string]Parser{
		"nginx":  mustCompile(t, KindNginx, NginxCombined),
		"apache": mustCompile(t, KindApache, ApacheCombined),
	}
	vhost := mustPreset(t, "vhost_combined")
	var want, e Entry
	for i, line := range lines {
		if err := Parse(line, &want); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		w, _ := got(&want)
		for name, p := range parsers {
			if err := p.Parse(line, &e); err != nil {
				t.Fatalf("%s: line %d: %v\n%s", name, i+1, err, line)
			}
			if g, vh := got(&e); g != w || vh != "" {
				t.Fatalf("%s: line %d\n got %+v\nwant %+v", name, i+1, g, w)
			}
		}
		vline := append([]byte("blog.example.com:80 "), line...)
		if err := vhost.Parse(vline, &e); err != nil {
			t.Fatalf("vhost_combined: line %d: %v", i+1, err)
		}
		if g, vh := got(&e); g != w || vh != "blog.example.com" {
			t.Fatalf("vhost_combined: line %d\n got %+v %q\nwant %+v", i+1, g, vh, w)
		}
	}
}

func TestCompiledAllocs(t *testing.T) {
	for name, p := range map[string]Parser{
		"compiled": mustCompile(t, KindNginx, NginxCombined),
		"json":     mustPreset(t, "json"),
	} {
		line := []byte(firstLine)
		if name == "json" {
			line = []byte(`{"time_local":"17/May/2015:10:05:03 +0000","request":"GET / HTTP/1.1","status":"200","http_user_agent":"ua"}`)
		}
		var e Entry
		allocs := testing.AllocsPerRun(1000, func() {
			if err := p.Parse(line, &e); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s allocates %v times per line, want 0", name, allocs)
		}
	}
}
