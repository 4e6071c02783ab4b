package syslog

import (
	"net/netip"
	"strconv"
	"time"
)

// Message is one syslog message.
type Message struct {
	// Received is when the listener read the message.
	Received time.Time
	// Transport is "udp" or "tcp"; Peer is the sender. Both are set by the
	// Listener, not by Parse.
	Transport string
	Peer      netip.AddrPort
	// Facility (0..23) and Severity (0..7) are split from PRI. nginx sends
	// local7 (23) and info (6) unless configured otherwise.
	Facility, Severity int
	// Timestamp is the sender's clock, in UTC; zero when the message has
	// none. An RFC 3164 timestamp has neither year nor zone: the zone is
	// Parser.Location, and the year puts it at most a week after Received
	// (December messages read in January are from the year before).
	Timestamp time.Time
	// Hostname and AppName are empty when absent (or "-" in RFC 5424).
	// AppName is the RFC 3164 TAG without its [pid]: nginx's tag= option.
	Hostname, AppName string
	// Content is what follows the header, without a trailing newline or
	// RFC 5424 byte-order mark: for nginx, the access-log line.
	//
	// Content aliases the receive buffer. It is valid only until the
	// Handler returns (or the next Parse with the same buffer); copy it to
	// keep it.
	Content []byte
}

// Reasons a message can be rejected for; each is a fixed token so it can
// be used directly as a metric label.
const (
	ReasonEmpty          = "empty"
	ReasonTooLong        = "too_long"  // over max_message_bytes; skipped whole
	ReasonTruncated      = "truncated" // a TCP peer went away inside a frame
	ReasonFraming        = "framing"   // a bad octet count; the connection is closed
	ReasonPRI            = "pri"
	ReasonVersion        = "version" // RFC 5424 version other than 1
	ReasonTimestamp      = "timestamp"
	ReasonHostname       = "hostname"
	ReasonAppName        = "app_name"
	ReasonProcID         = "procid"
	ReasonMsgID          = "msgid"
	ReasonStructuredData = "structured_data"
)

// Reasons returns every reason a message can be counted malformed for, so
// that callers can pre-register metric series at zero.
func Reasons() []string {
	return []string{ReasonEmpty, ReasonTooLong, ReasonTruncated, ReasonFraming,
		ReasonPRI, ReasonVersion, ReasonTimestamp, ReasonHostname, ReasonAppName,
		ReasonProcID, ReasonMsgID, ReasonStructuredData}
}

// ParseError says why a message was rejected.
type ParseError struct {
	Reason string // one of the Reason constants
	Offset int    // byte position in the message where parsing gave up
}

func (e *ParseError) Error() string {
	return "syslog: bad " + e.Reason + " at byte " + strconv.Itoa(e.Offset)
}

func fail(reason string, off int) error { return &ParseError{Reason: reason, Offset: off} }
