package logformat

import "time"

// field says where a value taken from a line goes in an Entry.
type field uint8

const (
	fSkip      field = iota // logged, but of no use to pagewatch
	fClient                 // $remote_addr, %h
	fIdent                  // %l
	fUser                   // $remote_user, %u
	fTimeLocal              // $time_local, %t without its brackets
	fTimeISO                // $time_iso8601
	fMsec                   // $msec, %{sec}t: Unix seconds, maybe with a fraction
	fRequest                // $request, %r
	fMethod                 // $request_method, %m
	fTarget                 // $request_uri, $uri, %U
	fQuery                  // $is_args, $args, %q: only ever right after a target
	fProto                  // $server_protocol, %H
	fStatus                 // $status, %>s
	fBytes                  // $body_bytes_sent, %b, %O
	fReferer                // $http_referer, %{Referer}i
	fUserAgent              // $http_user_agent, %{User-Agent}i
	fVhost                  // $host, $server_name, %v
	nFields
)

var fieldNames = [nFields]string{"skipped", "client", "ident", "user", "time", "time", "time",
	"request", "method", "target", "query", "protocol", "status", "bytes", "referer", "user_agent", "vhost"}

func (f field) String() string { return fieldNames[f] }

// reason is the ParseError reason for a bad value of f.
func (f field) reason() string {
	switch f {
	case fClient:
		return ReasonClient
	case fIdent:
		return ReasonIdent
	case fUser:
		return ReasonUser
	case fTimeLocal, fTimeISO, fMsec:
		return ReasonTime
	case fRequest, fMethod, fTarget, fQuery, fProto:
		return ReasonRequest
	case fStatus:
		return ReasonStatus
	case fBytes:
		return ReasonBytes
	case fReferer:
		return ReasonReferer
	case fUserAgent:
		return ReasonUserAgent
	case fVhost:
		return ReasonVhost
	}
	return ReasonField
}

// width is the fixed length of f's values, or 0 when it varies. A fixed
// width lets the parser skip searching for the next separator.
func (f field) width() int {
	switch f {
	case fTimeLocal:
		return len("17/May/2015:10:05:03 +0000")
	case fStatus:
		return 3 // always three digits; a wider field fails at its separator
	}
	return 0
}

// nginxVars maps the nginx variables pagewatch uses to fields; any other
// variable is skipped. They are also the default keys of JSON lines.
var nginxVars = map[string]field{
	"remote_addr":        fClient,
	"realip_remote_addr": fClient,
	"remote_user":        fUser,
	"time_local":         fTimeLocal,
	"time_iso8601":       fTimeISO,
	"msec":               fMsec,
	"request":            fRequest,
	"request_method":     fMethod,
	"request_uri":        fTarget,
	"uri":                fTarget,
	"document_uri":       fTarget,
	"is_args":            fQuery,
	"args":               fQuery,
	"query_string":       fQuery,
	"server_protocol":    fProto,
	"status":             fStatus,
	"body_bytes_sent":    fBytes,
	"bytes_sent":         fBytes,
	"http_referer":       fReferer,
	"http_user_agent":    fUserAgent,
	"host":               fVhost,
	"http_host":          fVhost,
	"server_name":        fVhost,
}

// store checks v as a value of f and puts it in e, or says it is bad.
// times caches the day of $time_local for the parser calling.
func store(e *Entry, f field, v []byte, times *timeCache) bool {
	switch f {
	case fSkip, fQuery:
		// A query is only compiled in right after a target, which then
		// spans it (see appendField).
	case fClient:
		// An IPv4/IPv6 address, or a host name with HostnameLookups.
		if !isHost(v) {
			return false
		}
		e.Client = v
	case fIdent:
		if len(v) == 0 {
			return false
		}
		e.Ident = v
	case fUser:
		if len(v) == 0 {
			return false
		}
		e.User = v
	case fTimeLocal:
		t, ok := times.parse(v)
		if !ok {
			return false
		}
		e.Time = t
	case fTimeISO:
		t, ok := parseISO(v)
		if !ok {
			return false
		}
		e.Time = t
	case fMsec:
		t, ok := parseMsec(v)
		if !ok {
			return false
		}
		e.Time = t
	case fRequest:
		e.Request = v
		splitRequest(e)
	case fMethod:
		e.Method = v
	case fTarget:
		e.Target = v
	case fProto:
		e.Proto = v
	case fStatus:
		st, ok := parseStatus(v)
		if !ok {
			return false
		}
		e.Status = st
	case fBytes:
		n, ok := parseBytes(v)
		if !ok {
			return false
		}
		e.Bytes = n
	case fReferer:
		e.Referer = v
	case fUserAgent:
		e.UserAgent = v
	case fVhost:
		if !isHost(v) {
			return false
		}
		e.Vhost = v
	}
	return true
}

// isHost reports whether v can be a host name or address: not empty, and
// no spaces, control bytes or non-ASCII.
func isHost(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	for _, c := range v {
		if !isHostByte(c) {
			return false
		}
	}
	return true
}

func isHostByte(c byte) bool { return c > ' ' && c < 0x7f }

// parseStatus parses an HTTP status: always three digits.
func parseStatus(v []byte) (int, bool) {
	if len(v) != 3 {
		return 0, false
	}
	a, b, c := int(v[0])-'0', int(v[1])-'0', int(v[2])-'0'
	if uint(a) > 9 || uint(b) > 9 || uint(c) > 9 {
		return 0, false
	}
	return a*100 + b*10 + c, true
}

// parseISO parses nginx's $time_iso8601, "2015-05-17T10:05:03+00:00", or
// the same with "Z" for UTC, by hand for the reason parseTime is.
func parseISO(b []byte) (time.Time, bool) {
	if len(b) != 25 && !(len(b) == 20 && b[19] == 'Z') {
		return time.Time{}, false
	}
	if b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return time.Time{}, false
	}
	year, mon, day := num(b[0:4]), num(b[5:7]), num(b[8:10])
	hour, minute, sec := num(b[11:13]), num(b[14:16]), num(b[17:19])
	if mon < 1 || mon > 12 || year < 1 || day < 1 || day > daysIn(mon, year) ||
		hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	zone := 0
	if len(b) == 25 {
		if b[22] != ':' {
			return time.Time{}, false
		}
		zh, zm := num(b[20:22]), num(b[23:25])
		if zh < 0 || zh > 23 || zm < 0 || zm > 59 {
			return time.Time{}, false
		}
		zone = zh*3600 + zm*60
		switch b[19] {
		case '+':
		case '-':
			zone = -zone
		default:
			return time.Time{}, false
		}
	}
	unix := daysSinceEpoch(year, mon, day)*86400 + int64(hour*3600+minute*60+sec-zone)
	return time.Unix(unix, 0).UTC(), true
}

// parseMsec parses nginx's $msec, Unix seconds with a millisecond
// fraction ("1431857103.123"); the fraction is optional.
func parseMsec(b []byte) (time.Time, bool) {
	// 12 digits of seconds reach the year 33658; more is not a log time.
	var sec, frac int64
	i := 0
	for ; i < len(b) && b[i] != '.'; i++ {
		if b[i] < '0' || b[i] > '9' || i >= 12 {
			return time.Time{}, false
		}
		sec = sec*10 + int64(b[i]-'0')
	}
	if i == 0 {
		return time.Time{}, false
	}
	if i < len(b) {
		digits := b[i+1:]
		if len(digits) == 0 || len(digits) > 9 {
			return time.Time{}, false
		}
		scale := int64(1e9)
		for _, c := range digits {
			if c < '0' || c > '9' {
				return time.Time{}, false
			}
			scale /= 10
			frac += int64(c-'0') * scale
		}
	}
	return time.Unix(sec, frac).UTC(), true
}
