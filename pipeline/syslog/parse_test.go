package syslog_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/pipeline/syslog"
)

const nginxLine = `203.0.113.9 - - [22/Nov/2024:10:00:00 +0000] "GET /pricing?ref=a%22b HTTP/1.1" 200 512 "https://example.com/\"quoted\"" "Mozilla/5.0 (X11; Linux x86_64)"`

// What nginx logs for a TLS handshake sent to its plain-HTTP port: the
// bytes are escaped in the line, so the line itself is printable.
const junkLine = `198.51.100.7 - - [22/Nov/2024:10:00:01 +0000] "\x16\x03\x01\x02\x00\x01\x00\x01\xFC\x03\x03" 400 157 "-" "-"`

func date(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestParse(t *testing.T) {
	received := date("2024-11-22T10:00:05Z")
	tests := []struct {
		name, in         string
		received         time.Time
		loc              *time.Location
		fac, sev         int
		ts               string // RFC 3339; "" for none
		host, app, conte string
	}{
		{name: "nginx default", in: "<190>Nov 22 10:00:00 web1 nginx: " + nginxLine,
			fac: 23, sev: 6, ts: "2024-11-22T10:00:00Z", host: "web1", app: "nginx", conte: nginxLine},
		{name: "nginx day padded with a space", in: "<190>Nov  2 10:00:00 web1 nginx: " + junkLine,
			fac: 23, sev: 6, ts: "2024-11-02T10:00:00Z", host: "web1", app: "nginx", conte: junkLine},
		{name: "nginx nohostname", in: "<190>Nov 22 10:00:00 nginx: " + nginxLine,
			fac: 23, sev: 6, ts: "2024-11-22T10:00:00Z", app: "nginx", conte: nginxLine},
		{name: "nginx facility, severity and tag set", in: "<132>Nov 22 10:00:00 web-1.example.com www_example: x",
			fac: 16, sev: 4, ts: "2024-11-22T10:00:00Z", host: "web-1.example.com", app: "www_example", conte: "x"},
		{name: "tag with pid", in: "<30>Nov 22 10:00:00 web1 nginx[1234]: " + nginxLine,
			fac: 3, sev: 6, ts: "2024-11-22T10:00:00Z", host: "web1", app: "nginx", conte: nginxLine},
		{name: "RFC 3164 example", in: "<34>Oct 11 22:14:15 mymachine su: 'su root' failed for lonvick on /dev/pts/8",
			fac: 4, sev: 2, ts: "2024-10-11T22:14:15Z", host: "mymachine", app: "su", conte: "'su root' failed for lonvick on /dev/pts/8"},
		{name: "RFC 3164 without tag", in: "<13>Feb  5 17:32:18 10.0.0.99 Use the BFG!",
			fac: 1, sev: 5, ts: "2024-02-05T17:32:18Z", host: "10.0.0.99", conte: "Use the BFG!"},
		{name: "IPv6 host", in: "<190>Nov 22 10:00:00 2001:db8::1 nginx: x",
			fac: 23, sev: 6, ts: "2024-11-22T10:00:00Z", host: "2001:db8::1", app: "nginx", conte: "x"},
		{name: "December read in January", in: "<190>Dec 31 23:59:59 web1 nginx: x", received: date("2025-01-01T00:00:10Z"),
			fac: 23, sev: 6, ts: "2024-12-31T23:59:59Z", host: "web1", app: "nginx", conte: "x"},
		{name: "January read in December (sender clock ahead)", in: "<190>Jan  1 00:00:01 web1 nginx: x", received: date("2024-12-31T23:59:58Z"),
			fac: 23, sev: 6, ts: "2025-01-01T00:00:01Z", host: "web1", app: "nginx", conte: "x"},
		{name: "sender zone", in: "<190>Nov 22 11:00:00.250 web1 nginx: x", loc: time.FixedZone("CET", 3600),
			fac: 23, sev: 6, ts: "2024-11-22T10:00:00.25Z", host: "web1", app: "nginx", conte: "x"},
		{name: "rsyslog forward format", in: "<190>2024-11-22T11:00:00.123456+01:00 web1 nginx: " + nginxLine,
			fac: 23, sev: 6, ts: "2024-11-22T10:00:00.123456Z", host: "web1", app: "nginx", conte: nginxLine},
		{name: "no timestamp, tag", in: "<190>nginx: x", fac: 23, sev: 6, app: "nginx", conte: "x"},
		{name: "no timestamp, no tag", in: "<13>just words", fac: 1, sev: 5, conte: "just words"},
		{name: "trailing newline and NUL", in: "<190>Nov 22 10:00:00 web1 nginx: x\r\n\x00",
			fac: 23, sev: 6, ts: "2024-11-22T10:00:00Z", host: "web1", app: "nginx", conte: "x"},
		{name: "empty content", in: "<190>Nov 22 10:00:00 web1 nginx:",
			fac: 23, sev: 6, ts: "2024-11-22T10:00:00Z", host: "web1", app: "nginx"},
		{name: "raw binary content", in: "<190>Nov 22 10:00:00 web1 nginx: \x16\x03\x01\x00\xff\xfe",
			fac: 23, sev: 6, ts: "2024-11-22T10:00:00Z", host: "web1", app: "nginx", conte: "\x16\x03\x01\x00\xff\xfe"},

		{name: "RFC 5424 example 1", in: "<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - \xEF\xBB\xBF'su root' failed for lonvick on /dev/pts/8",
			fac: 4, sev: 2, ts: "2003-10-11T22:14:15.003Z", host: "mymachine.example.com", app: "su", conte: "'su root' failed for lonvick on /dev/pts/8"},
		{name: "RFC 5424 example 2", in: "<165>1 2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 - - %% It's time to make the do-nuts.",
			fac: 20, sev: 5, ts: "2003-08-24T12:14:15.000003Z", host: "192.0.2.1", app: "myproc", conte: "%% It's time to make the do-nuts."},
		{name: "RFC 5424 example 4, SD and no MSG", in: `<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"][examplePriority@32473 class="high"]`,
			fac: 20, sev: 5, ts: "2003-10-11T22:14:15.003Z", host: "mymachine.example.com", app: "evntslog"},
		{name: "RFC 5424 escapes in SD", in: `<190>1 2024-11-22T10:00:00Z web1 nginx 1234 - [meta path="/a\"b\]c\\" x="[y]" z="\n"] ` + nginxLine,
			fac: 23, sev: 6, ts: "2024-11-22T10:00:00Z", host: "web1", app: "nginx", conte: nginxLine},
		{name: "RFC 5424 all nil", in: "<190>1 - - - - - - " + junkLine, fac: 23, sev: 6, conte: junkLine},
		{name: "RFC 5424 offset without colon", in: "<190>1 2024-11-22T11:30:00+0130 web1 nginx - - - x",
			fac: 23, sev: 6, ts: "2024-11-22T10:00:00Z", host: "web1", app: "nginx", conte: "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := syslog.Parser{Location: time.UTC}
			if tt.loc != nil {
				p.Location = tt.loc
			}
			rec := received
			if !tt.received.IsZero() {
				rec = tt.received
			}
			var m syslog.Message
			if err := p.Parse([]byte(tt.in), rec, &m); err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			var ts time.Time
			if tt.ts != "" {
				ts = date(tt.ts)
			}
			if m.Facility != tt.fac || m.Severity != tt.sev || !m.Timestamp.Equal(ts) || m.Hostname != tt.host ||
				m.AppName != tt.app || string(m.Content) != tt.conte || !m.Received.Equal(rec) {
				t.Fatalf("Parse(%q):\n got fac=%d sev=%d ts=%v host=%q app=%q content=%q\nwant fac=%d sev=%d ts=%v host=%q app=%q content=%q",
					tt.in, m.Facility, m.Severity, m.Timestamp, m.Hostname, m.AppName, m.Content,
					tt.fac, tt.sev, ts, tt.host, tt.app, tt.conte)
			}
			if !m.Timestamp.IsZero() && m.Timestamp.Location() != time.UTC {
				t.Fatalf("timestamp %v not in UTC", m.Timestamp)
			}
		})
	}
}

func TestParseMalformed(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct{ in, reason string }{
		{"", syslog.ReasonEmpty},
		{"\r\n", syslog.ReasonEmpty},
		{"hello", syslog.ReasonPRI},
		{"<>x", syslog.ReasonPRI},
		{"<192>Nov 22 10:00:00 h t: x", syslog.ReasonPRI},
		{"<0190>Nov 22 10:00:00 h t: x", syslog.ReasonPRI},
		{"<12", syslog.ReasonPRI},
		{"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", syslog.ReasonPRI},
		{"<13>2 2024-11-22T10:00:00Z h a p m - x", syslog.ReasonVersion},
		{"<13>12 2024-11-22T10:00:00Z h a p m - x", syslog.ReasonVersion},
		{"<13>1 2024-13-01T00:00:00Z h a p m - x", syslog.ReasonTimestamp},
		{"<13>1 2023-02-29T00:00:00Z h a p m - x", syslog.ReasonTimestamp},
		{"<13>1 2024-11-22T10:00:00 h a p m - x", syslog.ReasonTimestamp},
		{"<13>1 2024-11-22T10:00:00.Z h a p m - x", syslog.ReasonTimestamp},
		{"<13>1 -", syslog.ReasonHostname},
		{"<13>1 - " + long(256) + " a p m - x", syslog.ReasonHostname},
		{"<13>1 - h\x00st a p m - x", syslog.ReasonHostname},
		{"<13>1 - h " + long(49) + " p m - x", syslog.ReasonAppName},
		{"<13>1 - h a " + long(129) + " m - x", syslog.ReasonProcID},
		{"<13>1 - h a p " + long(33) + " - x", syslog.ReasonMsgID},
		{"<13>1 - h a p m", syslog.ReasonStructuredData},
		{"<13>1 - h a p m x", syslog.ReasonStructuredData},
		{"<13>1 - h a p m -x", syslog.ReasonStructuredData},
		{"<13>1 - h a p m [x", syslog.ReasonStructuredData},
		{`<13>1 - h a p m [x a="b]`, syslog.ReasonStructuredData},
		{`<13>1 - h a p m [x a="b\"]`, syslog.ReasonStructuredData},
		{`<13>1 - h a p m [x a=b]`, syslog.ReasonStructuredData},
		{`<13>1 - h a p m [ a="b"]`, syslog.ReasonStructuredData},
		{`<13>1 - h a p m [x a="b"]x`, syslog.ReasonStructuredData},
		{"<13>Nov 31 10:00:00 h t: x", syslog.ReasonTimestamp},
		{"<13>Nov 22 25:00:00 h t: x", syslog.ReasonTimestamp},
		{"<13>Nov 22 10:00 h t: x", syslog.ReasonTimestamp},
		{"<13>Nov 22 10:00:00x h t: x", syslog.ReasonTimestamp},
		{"<13>2024-11-22 10:00:00 h t: x", syslog.ReasonTimestamp},
		{"<13>Nov 22 10:00:00 \x16\x03\x01 t: x", syslog.ReasonHostname},
		{"<13>Nov 22 10:00:00", syslog.ReasonHostname},
	}
	for _, tt := range tests {
		var p syslog.Parser
		var m syslog.Message
		err := p.Parse([]byte(tt.in), date("2024-11-22T10:00:05Z"), &m)
		var pe *syslog.ParseError
		if !errors.As(err, &pe) || pe.Reason != tt.reason {
			t.Errorf("Parse(%q) = %v, want reason %s", tt.in, err, tt.reason)
		}
	}
	// 29 February parses only in a leap year.
	var p syslog.Parser
	var m syslog.Message
	if err := p.Parse([]byte("<13>Feb 29 10:00:00 h t: x"), date("2023-03-01T00:00:00Z"), &m); err == nil {
		t.Errorf("29 Feb 2023 accepted: %v", m.Timestamp)
	}
	if err := p.Parse([]byte("<13>Feb 29 10:00:00 h t: x"), date("2024-03-01T00:00:00Z"), &m); err != nil {
		t.Errorf("29 Feb 2024: %v", err)
	}
}

func TestParseDoesNotAllocate(t *testing.T) {
	p := syslog.Parser{Location: time.FixedZone("CET", 3600)}
	var m syslog.Message
	in3164 := []byte("<190>Nov 22 10:00:00 web1 nginx: " + nginxLine)
	in5424 := []byte(`<190>1 2024-11-22T10:00:00.123+01:00 web1 nginx 1234 - [meta a="b"] ` + nginxLine)
	now := time.Now()
	allocs := testing.AllocsPerRun(1000, func() {
		if p.Parse(in3164, now, &m) != nil || p.Parse(in5424, now, &m) != nil {
			t.Fatal("parse failed")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per two messages, want 0 once the names are cached", allocs)
	}
}
