package syslog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// frames runs a framer over r to the end and describes what it returned:
// each frame quoted, "TOO_LONG", and how it ended.
func frames(r io.Reader, limit int) []string {
	f := newFramer(r, limit)
	var out []string
	for {
		b, err := f.next()
		switch {
		case err == nil:
			out = append(out, fmt.Sprintf("%q", b))
			continue
		case errors.Is(err, errTooLong):
			out = append(out, "TOO_LONG")
			continue
		case errors.Is(err, errBadLength):
			out = append(out, "BAD_LENGTH")
		case errors.Is(err, io.EOF) && f.pending():
			out = append(out, "TRUNCATED")
		case errors.Is(err, io.EOF):
			out = append(out, "EOF")
		default:
			out = append(out, "ERR "+err.Error())
		}
		return out
	}
}

func TestFramer(t *testing.T) {
	x := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name, in string
		want     string
	}{
		{"octet counting", "5 <1>ab3 <2>", `"<1>ab" "<2>" EOF`},
		{"octet frame holding LF and NUL", "6 <1>\n\x00b", `"<1>\n\x00b" EOF`},
		{"newline", "<1>a\n<2>b\n", `"<1>a" "<2>b" EOF`},
		{"NUL and CRLF", "<1>a\x00<2>b\r\n\n\n<3>c\n", `"<1>a" "<2>b\r" "<3>c" EOF`},
		{"binary junk is newline framed", "\x16\x03\x01\x00\x05hi\n", `"\x16\x03\x01" "\x05hi" EOF`},
		{"octet too long keeps sync", "1025 <1>" + x(1022) + "4 <2>a", `TOO_LONG "<2>a" EOF`},
		{"octet exactly max", "1024 " + x(1024) + "1 y", `"` + x(1024) + `" "y" EOF`},
		{"newline too long keeps sync", "<1>" + x(3000) + "\n<2>a\n", `TOO_LONG "<2>a" EOF`},
		{"newline exactly max", x(1024) + "\ny\n", `"` + x(1024) + `" "y" EOF`},
		{"newline too long at the end", "<1>a\n" + x(2000), `"<1>a" TOO_LONG EOF`},
		{"huge count then EOF", "9999999999 <1>", `TOO_LONG EOF`},
		{"count too long", "12345678901 <1>", `BAD_LENGTH`},
		{"count not a number", "12a <1>", `BAD_LENGTH`},
		{"zero count", "3 <1>0 ", `"<1>" BAD_LENGTH`},
		{"count without frame", "3 <1>4", `"<1>" TRUNCATED`},
		{"EOF inside octet frame", "10 <1>abc", `TRUNCATED`},
		{"EOF inside newline frame", "<1>a\n<2>b", `"<1>a" TRUNCATED`},
		{"empty stream", "", `EOF`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []io.Reader{
				strings.NewReader(tt.in),
				iotest.OneByteReader(strings.NewReader(tt.in)),
				iotest.HalfReader(strings.NewReader(tt.in)),
				iotest.DataErrReader(strings.NewReader(tt.in)),
			} {
				if got := strings.Join(frames(r, 1024), " "); got != tt.want {
					t.Fatalf("%T: got  %s\nwant %s", r, got, tt.want)
				}
			}
		})
	}
}

func TestFramerReadError(t *testing.T) {
	boom := errors.New("boom")
	f := newFramer(io.MultiReader(strings.NewReader("<1>a\n<2>"), iotest.ErrReader(boom)), 1024)
	if b, err := f.next(); err != nil || string(b) != "<1>a" {
		t.Fatalf("first frame: %q %v", b, err)
	}
	if _, err := f.next(); !errors.Is(err, boom) || !f.pending() {
		t.Fatalf("got %v, pending %v; want boom with a frame pending", err, f.pending())
	}
}

// Frames of every size around the limit come out whole or as errTooLong,
// in order, through reads of any size, and the buffer never grows past
// what max needs.
func TestFramerBufferBound(t *testing.T) {
	var in bytes.Buffer
	var want []string
	for i := range 5000 {
		m := fmt.Sprintf("<%d>%s", i%192, strings.Repeat("y", (i*7)%1500))
		in.WriteString(m + "\n")
		if len(m) > 1024 {
			m = "TOO_LONG"
		}
		want = append(want, m)
	}
	f := newFramer(iotest.HalfReader(&in), 1024)
	for i, w := range want {
		b, err := f.next()
		if errors.Is(err, errTooLong) {
			b = []byte("TOO_LONG")
		} else if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if string(b) != w {
			t.Fatalf("frame %d: got %.20q (%d bytes), want %.20q (%d bytes)", i, b, len(b), w, len(w))
		}
	}
	if _, err := f.next(); !errors.Is(err, io.EOF) || f.pending() {
		t.Fatalf("end: %v, pending %v", err, f.pending())
	}
	if cap(f.buf) > 1024+lenPrefix {
		t.Fatalf("buffer grew to %d", cap(f.buf))
	}
}
