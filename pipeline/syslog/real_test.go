package syslog_test

import (
	"bytes"
	"testing"

	"github.com/pagewatch/pagewatch/internal/realdata"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
)

// A real access log sent through both transports comes out byte for byte,
// and parses as the file's lines do.
func TestRealLogOverSyslog(t *testing.T) {
	lines := realdata.Lines(t, realdata.ApacheLog)
	r := start(t, testConfig(), nil)

	var stream bytes.Buffer
	for _, l := range lines {
		stream.WriteString(octet(rsyslog5424(string(l))))
	}
	if _, err := r.dialTCP(t).Write(stream.Bytes()); err != nil {
		t.Fatal(err)
	}
	testcheck.Eventually(t, patience, "TCP delivery", func() bool { return r.sink.len() == len(lines) })
	u := r.dialUDP(t)
	for i, l := range lines {
		if _, err := u.Write([]byte(nginx3164(string(l)))); err != nil {
			t.Fatal(err)
		}
		if i%500 == 499 {
			testcheck.Eventually(t, patience, "UDP delivery", func() bool { return r.sink.len() == len(lines)+i+1 })
		}
	}
	testcheck.Eventually(t, patience, "UDP delivery", func() bool { return r.sink.len() == 2*len(lines) })

	var want []string
	var e logformat.Entry
	parsed := 0
	for _, l := range lines {
		want = append(want, string(l), string(l))
		if logformat.Parse(l, &e) == nil {
			parsed += 2
		}
	}
	wantContents(t, r.sink, want)
	for _, m := range r.sink.all() {
		if logformat.Parse(m.Content, &e) == nil {
			parsed--
		}
	}
	if parsed != 0 {
		t.Fatalf("delivered lines parse differently from the file's: %d", parsed)
	}
}
