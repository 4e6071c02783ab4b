package logformat

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// checkParsed fails unless err is a *ParseError with a known reason, or e
// holds only slices of line and values in range.
func checkParsed(t *testing.T, line []byte, e *Entry, err error) {
	t.Helper()
	if err != nil {
		var pe *ParseError
		if !errors.As(err, &pe) || !slices.Contains(Reasons(), pe.Reason) {
			t.Fatalf("error %v (%T) is not a *ParseError with a reason from Reasons()", err, err)
		}
		return
	}
	for name, s := range map[string][]byte{
		"Client": e.Client, "Ident": e.Ident, "User": e.User,
		"Request": e.Request, "Method": e.Method, "Target": e.Target, "Proto": e.Proto,
		"Referer": e.Referer, "UserAgent": e.UserAgent, "Vhost": e.Vhost,
	} {
		if !within(line, s) {
			t.Fatalf("%s %q is not a subslice of the input", name, s)
		}
	}
	if e.Status < 0 || e.Status > 999 || e.Bytes < -1 || e.Time.Location().String() != "UTC" {
		t.Fatalf("status %d, bytes %d, time %v out of range", e.Status, e.Bytes, e.Time)
	}
}

func addCombinedSeeds(f *testing.F, prefix string) {
	for _, c := range combinedCases {
		if len(c.line) < 1000 {
			f.Add([]byte(prefix + c.line))
		}
	}
	f.Add([]byte(prefix + `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1\" 200 1 "-" "-"`))
	f.Add([]byte(""))
}

// FuzzCompiledCombined also checks that whenever both the compiled
// combined format and Parse accept a line ending in a closing quote, they
// agree on every field but the user agent (Parse stops it at the first
// quote-space, the compiled format at the last quote).
func FuzzCompiledCombined(f *testing.F) {
	addCombinedSeeds(f, "")
	p := mustCompile(f, KindNginx, NginxCombined)
	f.Fuzz(func(t *testing.T, line []byte) {
		var e, want Entry
		err := p.Parse(line, &e)
		checkParsed(t, line, &e, err)
		if err == nil && Parse(line, &want) == nil {
			g, _ := got(&e)
			w, _ := got(&want)
			g.ua, w.ua = "", ""
			g.time = g.time.UTC()
			if g != w {
				t.Fatalf("compiled and Parse disagree on %q\n got %+v\nwant %+v", line, g, w)
			}
		}
	})
}

func FuzzVhostCombined(f *testing.F) {
	addCombinedSeeds(f, "www.example.com:443 ")
	p := mustPreset(f, "vhost_combined")
	f.Fuzz(func(t *testing.T, line []byte) {
		var e Entry
		checkParsed(t, line, &e, p.Parse(line, &e))
	})
}

func FuzzCompiledApache(f *testing.F) {
	f.Add([]byte(`::1 example.org 1234 [17/May/2015:12:05:03 +0200] "GET /a?x=1 HTTP/1.1" 200 0 - "ua \"x\"" % 1431857103`))
	f.Add([]byte(`::1 h 1 [17/May/2015:12:05:03 +0200] "\x16\x03" 400 - - "-" % 1`))
	p := mustCompile(f, KindApache, `%a %{Host}i %D %t "%m %U%q %H" %>s %B %!200,304{Referer}i "%{User-Agent}i" %% %{sec}t`)
	f.Fuzz(func(t *testing.T, line []byte) {
		var e Entry
		checkParsed(t, line, &e, p.Parse(line, &e))
	})
}

func FuzzJSON(f *testing.F) {
	f.Add([]byte(`{"time_iso8601":"2015-05-17T10:05:03+00:00","remote_addr":"2001:db8::1","request":"GET /a\"b HTTP/1.1","status":"200","body_bytes_sent":"0","http_user_agent":"\u00e9","host":"x","u":{"a":[1,"}"]},"n":null}`))
	f.Add([]byte(`{"time_local":"17/May/2015:10:05:03 +0000","request":"\u0016\u0003","status":400,"bytes_sent":7}`))
	f.Add([]byte(`{"msec":"1431857103.5","status":"200","request":"`))
	p := mustPreset(f, "json")
	f.Fuzz(func(t *testing.T, line []byte) {
		var e Entry
		checkParsed(t, line, &e, p.Parse(line, &e))
	})
}

// FuzzCompile feeds arbitrary formats to Compile and, when one compiles,
// a line to its parser: neither may panic.
func FuzzCompile(f *testing.F) {
	f.Add("nginx", NginxCombined, []byte(firstLine))
	f.Add("apache", ApacheVhostCombined, []byte("h:80 "+firstLine))
	f.Add("apache", `%h %{X}^ti %400,501{User-agent}i %t \"%r\" %%`, []byte(`a b c [17/May/2015:10:05:03 +0000] "-" %`))
	f.Add("nginx", `${host}$uri$is_args$args [$time_iso8601] $msec`, []byte(`h/a?b [2015-05-17T10:05:03Z] 1.5`))
	f.Add("json", `{"t":"$time_local","r":"$request","s":$status}`, []byte(`{"t":"17/May/2015:10:05:03 +0000","r":"-","s":200}`))
	f.Fuzz(func(t *testing.T, kind, format string, line []byte) {
		p, err := Compile(kind, format)
		if err != nil {
			return
		}
		var e Entry
		checkParsed(t, line, &e, p.Parse(line, &e))
	})
}

// FuzzKeyTable checks keyTable.match against a map lookup of the key that
// stringEnd delimits, at every quote of a line, for keys as a template
// can hold them (a newline separates them in keys).
func FuzzKeyTable(f *testing.F) {
	f.Add("remote_addr\nremote_user\nrequest\nrequest_uri\nab\na", []byte(`{"remote_addr":"1","request_time":"2","ab":3,"a\"":4}`))
	f.Add(`q\"x`+"\nq\\\\\nabcdefghijklmnopq", []byte(`"q\"x":"q\\":"abcdefghijklmnopq","abcdefghijklmnopr"`))
	f.Fuzz(func(t *testing.T, keyList string, line []byte) {
		keys := map[string]field{}
		for k, key := range strings.Split(keyList, "\n") {
			// A template's keys hold no unescaped quote and do not end in
			// an escaping backslash: stringEnd must find their end.
			if q := []byte(`"` + key + `"`); stringEnd(q, 0) == len(q)-1 {
				keys[key] = field(k%int(nFields-1)) + 1
			}
		}
		tab := newKeyTable(keys)
		for i, c := range line {
			if c != '"' {
				continue
			}
			f, ok, end := tab.match(line, i)
			wend := stringEnd(line, i)
			var wf field
			var wok bool
			if wend >= 0 {
				wf, wok = keys[string(line[i+1:wend])]
			}
			if end != wend || ok != wok || f != wf {
				t.Fatalf("key at %d of %q: match gives %v %v %d, want %v %v %d", i, line, f, ok, end, wf, wok, wend)
			}
		}
	})
}
