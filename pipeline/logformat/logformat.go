// Package logformat parses access log lines in the Apache/nginx "combined"
// format (and its "common" prefix) byte by byte, without regular
// expressions and without allocating on success.
//
//	83.149.9.216 - - [17/May/2015:10:05:03 +0000] "GET /x HTTP/1.1" 200 203023 "http://ref/" "Mozilla/5.0 ..."
//
// The byte slices of an Entry alias the input line and stay valid only until
// the caller reuses that buffer. Quoted fields are returned still escaped
// (Apache writes \" \\ and \xHH; nginx writes \xHH): unescaping is left to
// the few callers that need it, so the hot path never copies.
package logformat

import (
	"bytes"
	"strconv"
	"time"
)

// MaxLineLen bounds the lines Parse accepts. Apache and nginx cap request
// headers at about 8 KiB each, so a longer line is almost always several
// lines run together (a lost newline) rather than one real request.
const MaxLineLen = 64 << 10

// Entry is one parsed access log line.
type Entry struct {
	Client, Ident, User []byte
	Time                time.Time // always in UTC
	// Request is the raw request line between its quotes. Method, Target
	// and Proto are split from it only when it looks like HTTP; for "-"
	// (browser preconnects) or binary junk (TLS sent to port 80) they are
	// empty and Request keeps what the client sent.
	Request               []byte
	Method, Target, Proto []byte
	Status                int
	Bytes                 int64 // -1 when the field is "-"
	// Referer and UserAgent are empty for the "common" format.
	Referer, UserAgent []byte
	// Vhost is the virtual host the request was served for (Apache %v,
	// nginx $host or $server_name), for formats that log it; Parse never
	// sets it.
	Vhost []byte
}

// Reasons a line can be rejected for; each is a fixed token so it can be
// used directly as a metric label.
const (
	ReasonEmpty     = "empty"
	ReasonTooLong   = "too_long"
	ReasonClient    = "client"
	ReasonIdent     = "ident"
	ReasonUser      = "user"
	ReasonTime      = "time"
	ReasonRequest   = "request"
	ReasonQuote     = "quote" // a quoted field (other than the last) never closes
	ReasonStatus    = "status"
	ReasonBytes     = "bytes"
	ReasonReferer   = "referer"
	ReasonUserAgent = "user_agent"

	// Reported only by the parsers of Preset and Compile.
	ReasonVhost = "vhost"
	ReasonField = "field" // a field pagewatch skips, or a separator around it
	ReasonJSON  = "json"  // a JSON line that is not one well-formed object
)

// Reasons returns every Reason Parse and the parsers of Preset and Compile
// can report, so that callers can pre-register metric series at zero.
func Reasons() []string {
	return []string{ReasonEmpty, ReasonTooLong, ReasonClient, ReasonIdent,
		ReasonUser, ReasonTime, ReasonRequest, ReasonQuote, ReasonStatus,
		ReasonBytes, ReasonReferer, ReasonUserAgent,
		ReasonVhost, ReasonField, ReasonJSON}
}

// ParseError says why a line was rejected.
type ParseError struct {
	Reason string // one of the Reason constants
	Offset int    // byte position in the line where parsing gave up
}

func (e *ParseError) Error() string {
	return "logformat: bad " + e.Reason + " at byte " + strconv.Itoa(e.Offset)
}

func fail(reason string, off int) error { return &ParseError{Reason: reason, Offset: off} }

// Parse parses one line (without its trailing newline; a stray \n or a
// trailing \r, as left by logs copied from Windows, is ignored) into e,
// overwriting all of e. On error e holds no useful data and the error is a
// *ParseError. Parse keeps no state, so it is safe for concurrent use.
//
// Fields after the user agent are ignored, so the common nginx variants
// that append e.g. "$http_x_forwarded_for" or $request_time still parse.
func Parse(line []byte, e *Entry) error {
	*e = Entry{}
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) == 0 {
		return fail(ReasonEmpty, 0)
	}
	if len(line) > MaxLineLen {
		return fail(ReasonTooLong, MaxLineLen)
	}

	// Client: an IPv4/IPv6 address, or a host name with HostnameLookups.
	i := bytes.IndexByte(line, ' ')
	if i <= 0 {
		return fail(ReasonClient, 0)
	}
	for k, c := range line[:i] {
		if c <= ' ' || c >= 0x7f {
			return fail(ReasonClient, k)
		}
	}
	e.Client = line[:i]
	i++

	j := bytes.IndexByte(line[i:], ' ')
	if j <= 0 {
		return fail(ReasonIdent, i)
	}
	e.Ident = line[i : i+j]
	i += j + 1

	// The authenticated user is whatever the client sent and may contain
	// spaces, so it ends at " [" rather than at the next space.
	j = bytes.Index(line[i:], []byte(" ["))
	if j <= 0 {
		return fail(ReasonUser, i)
	}
	e.User = line[i : i+j]
	i += j + 2

	const tsLen = len("17/May/2015:10:05:03 +0000")
	if len(line) < i+tsLen+1 || line[i+tsLen] != ']' {
		return fail(ReasonTime, i)
	}
	t, ok := parseTime(line[i : i+tsLen])
	if !ok {
		return fail(ReasonTime, i)
	}
	e.Time = t
	i += tsLen + 1

	if len(line) < i+2 || line[i] != ' ' || line[i+1] != '"' {
		return fail(ReasonRequest, i)
	}
	i += 2
	j = quoteEnd(line, i)
	if j < 0 {
		return fail(ReasonQuote, i-1)
	}
	e.Request = line[i:j]
	splitRequest(e)
	i = j + 1

	// Status is always three digits; "-" or a missing status means the
	// line is not an access log line we understand.
	if len(line) < i+5 || line[i] != ' ' || line[i+4] != ' ' {
		return fail(ReasonStatus, i)
	}
	st := 0
	for _, c := range line[i+1 : i+4] {
		if c < '0' || c > '9' {
			return fail(ReasonStatus, i+1)
		}
		st = st*10 + int(c-'0')
	}
	e.Status = st
	i += 5

	j = bytes.IndexByte(line[i:], ' ')
	if j < 0 {
		j = len(line) - i
	}
	n, ok := parseBytes(line[i : i+j])
	if !ok {
		return fail(ReasonBytes, i)
	}
	e.Bytes = n
	i += j
	if i == len(line) {
		return nil // common format
	}

	if len(line) < i+2 || line[i] != ' ' || line[i+1] != '"' {
		return fail(ReasonReferer, i)
	}
	i += 2
	j = quoteEnd(line, i)
	if j < 0 {
		return fail(ReasonQuote, i-1)
	}
	e.Referer = line[i:j]
	i = j + 1

	if len(line) < i+2 || line[i] != ' ' || line[i+1] != '"' {
		return fail(ReasonUserAgent, i)
	}
	i += 2
	j = quoteEnd(line, i)
	if j < 0 {
		// Truncated lines (a full disk, a log rotated mid-write) lose the
		// closing quote of the last field; the rest is still worth counting.
		j = len(line)
	}
	e.UserAgent = line[i:j]
	return nil
}

// quoteEnd returns the index of the quote closing the field that starts at
// start (just past its opening quote), or -1. A quote preceded by an odd
// number of backslashes is Apache's escaped \". Requiring a space or the
// end of line after the closing quote also copes with loggers that do not
// escape quotes at all, as long as the stray quote is inside a word.
func quoteEnd(line []byte, start int) int {
	for i := start; i < len(line); {
		j := bytes.IndexByte(line[i:], '"')
		if j < 0 {
			return -1
		}
		q := i + j
		if (q+1 == len(line) || line[q+1] == ' ') && !escaped(line[start:q]) {
			return q
		}
		i = q + 1
	}
	return -1
}

// escaped reports whether field ends in an odd number of backslashes.
func escaped(field []byte) bool {
	n := 0
	for k := len(field) - 1; k >= 0 && field[k] == '\\'; k-- {
		n++
	}
	return n%2 == 1
}

// splitRequest fills Method, Target and Proto from e.Request when it starts
// with an HTTP method token. The target may itself contain spaces (sent raw
// by broken clients), so the protocol is taken from the last word and only
// when it starts with "HTTP/" — "GET /foo" has no protocol at all.
func splitRequest(e *Entry) {
	r := e.Request
	sp := bytes.IndexByte(r, ' ')
	if sp <= 0 {
		return
	}
	for _, c := range r[:sp] {
		if !isTchar[c] {
			return
		}
	}
	e.Method = r[:sp]
	rest := r[sp+1:]
	if k := bytes.LastIndexByte(rest, ' '); k >= 0 && bytes.HasPrefix(rest[k+1:], []byte("HTTP/")) {
		e.Proto = rest[k+1:]
		rest = rest[:k]
	}
	e.Target = rest
}

// isTchar marks the bytes allowed in an HTTP method (RFC 9110 token).
var isTchar = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// parseBytes parses the response size: digits, or "-" (Apache's %b for an
// empty body) as -1.
func parseBytes(b []byte) (int64, bool) {
	if len(b) == 1 && b[0] == '-' {
		return -1, true
	}
	// 18 digits cannot overflow an int64 and is far beyond any real body.
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
