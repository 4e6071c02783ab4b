package syslog

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// Config is the `ingest.tail.syslog:` section. With neither listen address
// set the section is off: it validates, and the daemon starts no Listener.
type Config struct {
	// ListenUDP is where nginx sends (access_log syslog:server=...), e.g.
	// "127.0.0.1:5514". Empty: no UDP listener.
	ListenUDP string `yaml:"listen_udp"`
	// ListenTCP is where rsyslog or syslog-ng forward to, with
	// octet-counting or newline framing (told apart per connection).
	// Empty: no TCP listener.
	ListenTCP string `yaml:"listen_tcp"`
	// MaxMessageBytes caps one message (datagram or frame). Longer ones are
	// counted as too_long and skipped whole.
	MaxMessageBytes int `yaml:"max_message_bytes"`
	// TCPIdleTimeout closes a connection that sent nothing for this long,
	// so half-open connections of vanished hosts free their slot.
	TCPIdleTimeout    time.Duration `yaml:"tcp_idle_timeout"`
	MaxTCPConnections int           `yaml:"max_tcp_connections"`
	// Tags keeps only messages whose app-name (RFC 3164 TAG) is listed,
	// e.g. [nginx]. Empty: all messages.
	Tags []string `yaml:"tags"`
	// Timezone is the zone of RFC 3164 timestamps, which carry none: the
	// senders' zone ("Local", "UTC" or an IANA name).
	Timezone string `yaml:"timezone"`
	// UDPQueueBytes bounds the memory of the datagrams read and not yet
	// handled (the one in the handler included; each costs at least 576
	// bytes). UDP cannot push back on the sender, so when the handler is
	// slower than the traffic the queue fills and datagrams are dropped.
	UDPQueueBytes int `yaml:"udp_queue_bytes"`
	// UDPReadBuffer is the socket's receive buffer (SO_RCVBUF), which
	// absorbs bursts while the reader is descheduled. Linux caps it at
	// net.core.rmem_max; 0 keeps the system default.
	UDPReadBuffer int `yaml:"udp_read_buffer"`
}

// DefaultConfig returns the defaults: both listeners off.
func DefaultConfig() Config {
	return Config{
		MaxMessageBytes:   64 << 10,
		TCPIdleTimeout:    10 * time.Minute,
		MaxTCPConnections: 256,
		Timezone:          "Local",
		UDPQueueBytes:     8 << 20,
		UDPReadBuffer:     4 << 20,
	}
}

// Enabled reports whether a listen address is set.
func (c Config) Enabled() bool { return c.ListenUDP != "" || c.ListenTCP != "" }

const maxTagLen = 48 // RFC 5424 APP-NAME

// Validate reports every problem, naming its key.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, l := range []struct{ key, addr string }{{"listen_udp", c.ListenUDP}, {"listen_tcp", c.ListenTCP}} {
		if l.addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(l.addr); err != nil {
			add("ingest.tail.syslog.%s: want host:port, got %q", l.key, l.addr)
		}
	}
	// RFC 5424 requires receivers to take 480-byte messages and RFC 3164
	// allowed 1024; less would reject ordinary access-log lines.
	if c.MaxMessageBytes < 1<<10 || c.MaxMessageBytes > 1<<20 {
		add("ingest.tail.syslog.max_message_bytes: must be 1024..1048576, got %d", c.MaxMessageBytes)
	}
	if c.TCPIdleTimeout < time.Second {
		add("ingest.tail.syslog.tcp_idle_timeout: must be at least 1s, got %s", c.TCPIdleTimeout)
	}
	if c.MaxTCPConnections < 1 {
		add("ingest.tail.syslog.max_tcp_connections: must be at least 1, got %d", c.MaxTCPConnections)
	}
	for i, t := range c.Tags {
		if t == "" || len(t) > maxTagLen || !printable([]byte(t)) {
			add("ingest.tail.syslog.tags[%d]: must be 1..%d printable ASCII characters without spaces, got %q", i, maxTagLen, t)
		}
	}
	if _, err := c.location(); err != nil {
		add("ingest.tail.syslog.timezone: %v", err)
	}
	if c.UDPQueueBytes < c.MaxMessageBytes {
		add("ingest.tail.syslog.udp_queue_bytes: must be at least max_message_bytes (%d), got %d", c.MaxMessageBytes, c.UDPQueueBytes)
	}
	if c.UDPReadBuffer < 0 {
		add("ingest.tail.syslog.udp_read_buffer: must not be negative, got %d", c.UDPReadBuffer)
	}
	return errors.Join(errs...)
}

func (c Config) location() (*time.Location, error) {
	if c.Timezone == "" {
		return nil, errors.New(`must be set ("Local", "UTC" or an IANA zone name)`)
	}
	return time.LoadLocation(c.Timezone)
}
