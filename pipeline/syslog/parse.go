package syslog

import (
	"bytes"
	"time"
)

// Parser parses RFC 3164 and RFC 5424 messages, telling them apart per
// message. The zero Parser is ready to use. A Parser remembers the host
// and app names it has seen, so that the strings of a Message are not
// allocated anew for every message; it is therefore not safe for
// concurrent use: give each goroutine its own.
type Parser struct {
	// Location is the zone of RFC 3164 timestamps; nil means time.Local.
	Location *time.Location
	names    map[string]string
}

// maxNames bounds the name cache: a sender inventing a name per message
// must not grow it without end.
const maxNames = 4096

// Parse parses one message (one datagram or TCP frame) into m, overwriting
// all of m; Received is set to received, which also anchors the year of an
// RFC 3164 timestamp (the zero time means now). Content aliases data. On
// error m holds no useful data and the error is a *ParseError. Trailing
// newlines, carriage returns and NULs are ignored, as some senders add them
// even to datagrams.
func (p *Parser) Parse(data []byte, received time.Time, m *Message) error {
	*m = Message{Received: received}
	for n := len(data); n > 0 && (data[n-1] == '\n' || data[n-1] == '\r' || data[n-1] == 0); n-- {
		data = data[:n-1]
	}
	if len(data) == 0 {
		return fail(ReasonEmpty, 0)
	}
	pri, i, ok := parsePRI(data)
	if !ok {
		return fail(ReasonPRI, 0)
	}
	m.Facility, m.Severity = pri>>3, pri&7
	// RFC 5424 puts a version and a space right after PRI. RFC 3164 has a
	// month name there, or an RFC 3339 time (rsyslog's and syslog-ng's
	// forwarding formats: digits then '-'), or nothing at all.
	j := i
	for j < len(data) && j-i < 3 && isDigit(data[j]) {
		j++
	}
	if j > i && j < len(data) && data[j] == ' ' {
		if j != i+1 || data[i] != '1' {
			return fail(ReasonVersion, i)
		}
		return p.parse5424(data, j+1, m)
	}
	return p.parse3164(data, i, m)
}

// parsePRI reads "<N>" with N of one to three digits and at most 191
// (facility 23, severity 7), returning N and the index after '>'.
func parsePRI(b []byte) (pri, next int, ok bool) {
	if len(b) < 3 || b[0] != '<' {
		return 0, 0, false
	}
	for i := 1; i < len(b) && i <= 4; i++ {
		c := b[i]
		if c == '>' {
			return pri, i + 1, i > 1 && pri <= 191
		}
		if !isDigit(c) || i == 4 {
			return 0, 0, false
		}
		pri = pri*10 + int(c-'0')
	}
	return 0, 0, false
}

// parse3164 parses what follows PRI in a BSD message:
//
//	Mmm dd hh:mm:ss HOSTNAME TAG[pid]: CONTENT
//
// nginx sends exactly this ("<190>Nov  2 10:00:00 web1 nginx: <line>",
// day padded with a space, no pid), or without HOSTNAME under its
// nohostname option. RFC 3164 says a message without a timestamp has no
// HOSTNAME either, which is what relays assume.
func (p *Parser) parse3164(b []byte, i int, m *Message) error {
	stamped := false
	switch {
	case i < len(b) && isDigit(b[i]):
		end := tokenEnd(b, i)
		t, ok := parseRFC3339(b[i:end])
		if !ok {
			return fail(ReasonTimestamp, i)
		}
		m.Timestamp, i, stamped = t, end, true
	case monthAt(b, i) > 0:
		t, n, ok := p.parseBSDTime(b[i:], m.Received)
		if !ok {
			return fail(ReasonTimestamp, i)
		}
		m.Timestamp, i, stamped = t, i+n, true
	}
	if stamped {
		if i < len(b) && b[i] != ' ' {
			return fail(ReasonTimestamp, i)
		}
		for i < len(b) && b[i] == ' ' {
			i++
		}
	}
	if tag, next, ok := parseTag(b, i); ok {
		m.AppName, m.Content = p.intern(tag), b[next:]
		return nil
	}
	if !stamped {
		m.Content = b[i:]
		return nil
	}
	end := tokenEnd(b, i)
	if end == i || end-i > 255 || !printable(b[i:end]) {
		return fail(ReasonHostname, i)
	}
	m.Hostname = p.intern(b[i:end])
	i = end
	if i < len(b) {
		i++ // the space tokenEnd stopped at
	}
	if tag, next, ok := parseTag(b, i); ok {
		m.AppName, m.Content = p.intern(tag), b[next:]
		return nil
	}
	// A TAG is optional: then the rest is all content.
	m.Content = b[i:]
	return nil
}

// parseTag reads "TAG: " or "TAG[pid]: " at i (the space may be missing at
// the end of the message) and returns TAG and the index of the content.
// Anything else is not a tag: a hostname, or content without one. The
// colon must end the token, so an IPv6 address is never taken for a tag.
func parseTag(b []byte, i int) (tag []byte, next int, ok bool) {
	j := i
	for j < len(b) && j-i <= maxTagLen {
		c := b[j]
		if c == ':' || c == '[' {
			break
		}
		if c <= ' ' || c >= 0x7f {
			return nil, 0, false
		}
		j++
	}
	if j == i || j-i > maxTagLen || j == len(b) {
		return nil, 0, false
	}
	tag = b[i:j]
	if b[j] == '[' {
		k := bytes.IndexByte(b[j:min(len(b), j+130)], ']')
		if k < 0 {
			return nil, 0, false
		}
		j += k + 1
	}
	if j >= len(b) || b[j] != ':' {
		return nil, 0, false
	}
	j++
	if j < len(b) {
		if b[j] != ' ' {
			return nil, 0, false
		}
		j++
	}
	return tag, j, true
}

// tokenEnd returns the index of the first space at or after i, or len(b).
func tokenEnd(b []byte, i int) int {
	if k := bytes.IndexByte(b[i:], ' '); k >= 0 {
		return i + k
	}
	return len(b)
}

// printable reports whether b is all PRINTUSASCII (RFC 5424: 33..126), as
// host and app names must be; it keeps control bytes out of logs and
// metric labels.
func printable(b []byte) bool {
	for _, c := range b {
		if c < 33 || c > 126 {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// intern returns b as a string, from the cache when seen before.
func (p *Parser) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := p.names[string(b)]; ok {
		return s
	}
	if p.names == nil || len(p.names) >= maxNames {
		p.names = make(map[string]string, 16)
	}
	s := string(b)
	p.names[s] = s
	return s
}

func (p *Parser) location() *time.Location {
	if p.Location == nil {
		return time.Local
	}
	return p.Location
}
