package syslog

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
	"testing/iotest"
	"time"
)

var fuzzReceived = time.Date(2024, 11, 22, 10, 0, 5, 0, time.UTC)

// checkMessage holds what a parsed message must satisfy whatever the
// input: fields in range, names clean, Content a piece of the input.
// Only Parse trims terminators; trimmed says whether m came from it.
func checkMessage(t *testing.T, in []byte, m *Message, err error, trimmed bool) {
	t.Helper()
	if err != nil {
		var pe *ParseError
		if !errors.As(err, &pe) || !slices.Contains(Reasons(), pe.Reason) || pe.Offset < 0 || pe.Offset > len(in) {
			t.Fatalf("error %#v", err)
		}
		return
	}
	if m.Facility < 0 || m.Facility > 23 || m.Severity < 0 || m.Severity > 7 {
		t.Fatalf("facility %d severity %d", m.Facility, m.Severity)
	}
	if len(m.Hostname) > 255 || !printable([]byte(m.Hostname)) || len(m.AppName) > maxTagLen || !printable([]byte(m.AppName)) {
		t.Fatalf("hostname %q app %q", m.Hostname, m.AppName)
	}
	if !m.Timestamp.IsZero() && m.Timestamp.Location() != time.UTC {
		t.Fatalf("timestamp %v not UTC", m.Timestamp)
	}
	if !within(in, m.Content) {
		t.Fatalf("content %q is not a piece of the input", m.Content)
	}
	if n := len(m.Content); trimmed && n > 0 && (m.Content[n-1] == '\n' || m.Content[n-1] == 0) {
		t.Fatalf("content %q keeps its terminator", m.Content)
	}
}

// within reports whether s lies inside in's bytes (it aliases them).
func within(in, s []byte) bool {
	if len(s) == 0 {
		return true
	}
	off := cap(in) - cap(s)
	return off >= 0 && off+len(s) <= len(in) && &in[off] == &s[0]
}

// checkRFC3339 compares parseRFC3339 with time.Parse on what both read.
func checkRFC3339(t *testing.T, b []byte) {
	got, ok := parseRFC3339(b)
	if !ok || len(b) < 20 || b[10] != 'T' || bytes.Contains(b, []byte(":60")) || (b[len(b)-1] != 'Z' && b[len(b)-3] != ':') {
		return
	}
	want, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil || !want.Equal(got) {
		t.Fatalf("%q: got %v, time.Parse says %v (%v)", b, got, want, err)
	}
}

func FuzzParseRFC3164(f *testing.F) {
	for _, s := range []string{
		"Nov 22 10:00:00 web1 nginx: 1.2.3.4 - - [22/Nov/2024:10:00:00 +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"-\"",
		"Nov  2 10:00:00 nginx: x",
		"Feb 29 10:00:00.123456 h t[1]: x\r\n",
		"Dec 31 23:59:59 2001:db8::1 nginx: x",
		"2024-11-22T11:00:00.123456+01:00 web1 nginx: x",
		"2024-02-29T00:00:00Z h t: \x00",
		"nginx: x",
		"just words",
		"Nov 22 10:00:00 \x16\x03\x01 t: x",
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := append([]byte("<190>"), data...)
		for _, p := range []*Parser{{Location: time.UTC}, {Location: time.FixedZone("X", -9*3600-1800)}} {
			var m Message
			m.Received = fuzzReceived
			err := p.parse3164(in, 5, &m)
			checkMessage(t, in, &m, err, false)
			// Only a BSD timestamp's year is guessed; RFC 3339 gives its own.
			if err == nil && monthAt(in, 5) > 0 && (m.Timestamp.Before(fuzzReceived.AddDate(-1, 0, -2)) || m.Timestamp.After(fuzzReceived.AddDate(0, 0, 8))) {
				t.Fatalf("timestamp %v too far from receipt", m.Timestamp)
			}
			err = p.Parse(data, fuzzReceived, &m)
			checkMessage(t, data, &m, err, true)
		}
		checkRFC3339(t, data[:tokenEnd(data, 0)])
	})
}

func FuzzParseRFC5424(f *testing.F) {
	for _, s := range []string{
		"2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - \xEF\xBB\xBF'su root' failed",
		"2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 - - %% It's time to make the do-nuts.",
		`2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"][examplePriority@32473 class="high"]`,
		`2024-11-22T10:00:00Z web1 nginx 1234 - [meta path="/a\"b\]c\\" x="[y]"] line`,
		"- - - - - - ",
		"- - - - - -",
		"2024-11-22T11:30:00+0130 h a p m - x\n",
		`- h a p m [x a="\`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := append([]byte("<165>1 "), data...)
		var p Parser
		var m Message
		err := p.parse5424(in, 7, &m)
		checkMessage(t, in, &m, err, false)
		err = p.Parse(in, fuzzReceived, &m)
		checkMessage(t, in, &m, err, true)
		if _, ok := skipSD(data, 0); ok && len(data) > 0 && data[0] == '[' {
			// A well-formed SD must end with ']'.
			if end, _ := skipSD(data, 0); data[end-1] != ']' {
				t.Fatalf("SD %q ends at %d", data, end)
			}
		}
		checkRFC3339(t, data[:tokenEnd(data, 0)])
	})
}

// FuzzFramer feeds arbitrary streams through arbitrary read sizes. The
// frames must not depend on how the stream was cut, must respect the
// limit, and the framer must always finish. It also checks round trips:
// messages taken from the input, framed either way, come back unchanged.
func FuzzFramer(f *testing.F) {
	for _, s := range []string{
		"5 <1>ab3 <2>", "<1>a\n<2>b\x00<3>c\r\n", "65 <1>" + string(bytes.Repeat([]byte("x"), 62)) + "1 y",
		"9999999999 <1>", "12a <1>", "10 <1>abc", "\x16\x03\x01\x00\x05hi\n", "",
	} {
		f.Add([]byte(s), uint8(3))
	}
	const limit = 64
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		whole := runFramer(t, bytes.NewReader(data), limit, len(data))
		cut := runFramer(t, &chunkReader{data: data, size: int(chunk%17) + 1}, limit, len(data))
		if !slices.Equal(whole, cut) {
			t.Fatalf("depends on read sizes:\n%q\n%q", whole, cut)
		}
		// Round trips, with the input's 0xff bytes as message boundaries.
		var msgs []string
		for _, m := range bytes.Split(data, []byte{0xff}) {
			if len(m) > 0 {
				msgs = append(msgs, string(m))
			}
		}
		var octets, lines bytes.Buffer
		var wantOctet, wantLF []string
		for _, m := range msgs {
			octets.WriteString(itoa(len(m)) + " " + m)
			wantOctet = append(wantOctet, expectFrame(m, limit))
			if clean := string(bytes.Map(func(r rune) rune {
				if r == '\n' || r == 0 {
					return -1
				}
				return r
			}, []byte(m))); clean != "" {
				lines.WriteString(clean + "\n")
				wantLF = append(wantLF, expectFrame(clean, limit))
			}
		}
		if l := lines.Bytes(); len(l) > 0 && l[0] >= '1' && l[0] <= '9' {
			wantLF = nil // a first digit means octet counting to the framer
		}
		wantOctet = append(wantOctet, "EOF")
		if got := runFramer(t, &chunkReader{data: octets.Bytes(), size: int(chunk%17) + 1}, limit, octets.Len()); !slices.Equal(got, wantOctet) {
			t.Fatalf("octet round trip:\n got %q\nwant %q", got, wantOctet)
		}
		if wantLF != nil {
			wantLF = append(wantLF, "EOF")
			if got := runFramer(t, &chunkReader{data: lines.Bytes(), size: int(chunk%17) + 1}, limit, lines.Len()); !slices.Equal(got, wantLF) {
				t.Fatalf("newline round trip:\n got %q\nwant %q", got, wantLF)
			}
		}
	})
}

func expectFrame(m string, limit int) string {
	if len(m) > limit {
		return "TOO_LONG"
	}
	return m
}

func itoa(n int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}

// runFramer returns what the framer made of r: frames, "TOO_LONG", then
// how the stream ended. Every frame or TOO_LONG consumes input, so more
// results than input bytes means the framer is stuck.
func runFramer(t *testing.T, r io.Reader, limit, n int) []string {
	fr := newFramer(iotest.DataErrReader(r), limit)
	var out []string
	for len(out) <= n+1 {
		b, err := fr.next()
		switch {
		case err == nil:
			if len(b) > limit || (fr.mode == modeLF && len(b) == 0) {
				t.Fatalf("frame of %d bytes", len(b))
			}
			out = append(out, string(b))
			continue
		case errors.Is(err, errTooLong):
			out = append(out, "TOO_LONG")
			continue
		case errors.Is(err, errBadLength):
			out = append(out, "BAD_LENGTH")
		case errors.Is(err, io.EOF) && fr.pending():
			out = append(out, "TRUNCATED")
		case errors.Is(err, io.EOF):
			out = append(out, "EOF")
		default:
			t.Fatalf("error %v", err)
		}
		if cap(fr.buf) > limit+lenPrefix {
			t.Fatalf("buffer grew to %d", cap(fr.buf))
		}
		return out
	}
	t.Fatalf("framer stuck: %d results from %d bytes", len(out), n)
	return nil
}

type chunkReader struct {
	data []byte
	size int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.size)], r.data)
	r.data = r.data[n:]
	return n, nil
}
