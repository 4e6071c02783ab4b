package logformat

import (
	"testing"
	"time"
)

func FuzzParse(f *testing.F) {
	const pre = `1.2.3.4 - - [17/May/2015:10:05:03 +0000] `
	for _, s := range []string{
		firstLine,
		"",
		"\r",
		pre + `"GET /a HTTP/1.0" 200 5`,
		pre + `"-" 408 - "-" "-"`,
		pre + `"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" 400 0 "-" "-"`,
		pre + `"GET /q?x=\"a\"&b=\\ HTTP/1.1" 200 1 "http://r/\"x\"" "UA \\"`,
		pre + `"GET /foo" 400 10 "-" "Mozilla/5.0 (compatible; Googlebot/2.1`,
		`2001:db8::1 - john smith [29/Feb/2016:23:59:59 -0530] "GET /my file HTTP/1.1" 200 0 "-" "ua"` + "\r",
		"1.2.3.4 - - [31/Dec/1969:23:59:59 +1400] \"\xff\xfe\" 200 1 \"\x80\" \"\xc3\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var e Entry
		err := Parse(line, &e)
		if err != nil {
			if _, ok := err.(*ParseError); !ok { //nolint:errorlint // Parse's error itself must be a *ParseError, not wrap one
				t.Fatalf("error %T is not a *ParseError", err)
			}
			return
		}
		for name, s := range map[string][]byte{
			"Client": e.Client, "Ident": e.Ident, "User": e.User,
			"Request": e.Request, "Method": e.Method, "Target": e.Target, "Proto": e.Proto,
			"Referer": e.Referer, "UserAgent": e.UserAgent,
		} {
			if !within(line, s) {
				t.Fatalf("%s %q is not a subslice of the input", name, s)
			}
		}
		if e.Status < 0 || e.Status > 999 || e.Bytes < -1 {
			t.Fatalf("status %d, bytes %d out of range", e.Status, e.Bytes)
		}
		// The hand-written calendar must agree with time.Parse.
		ts := line[len(e.Client)+len(e.Ident)+len(e.User)+4:][:26]
		want, perr := time.Parse("02/Jan/2006:15:04:05 -0700", string(ts))
		if perr != nil || !want.Equal(e.Time) || e.Time.Location() != time.UTC {
			t.Fatalf("time %q: got %v, time.Parse says %v (%v)", ts, e.Time, want, perr)
		}
	})
}

// within reports whether s shares line's backing array inside line[:len(line)].
// Parse only slices forward from line, so cap tells where s starts.
func within(line, s []byte) bool {
	if len(s) == 0 {
		return true
	}
	off := cap(line) - cap(s)
	return off >= 0 && off+len(s) <= len(line) && &line[off] == &s[0]
}
