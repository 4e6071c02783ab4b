// Package syslog receives access-log lines as syslog messages, so that
// nginx's
//
//	access_log syslog:server=127.0.0.1:5514,tag=nginx combined;
//
// (UDP, one datagram per line) and rsyslog or syslog-ng forwarding over
// TCP can feed pagewatch without a file in between.
//
// Messages may be RFC 3164 (BSD syslog, which nginx sends:
// "<190>Nov  2 10:00:00 web1 nginx: <line>") or RFC 5424, told apart per
// message. TCP connections may use octet counting or newline framing (RFC
// 6587), told apart per connection. A Listener hands each message to a
// Handler; malformed, over-long and filtered-out messages are counted by
// reason, sampled into the log and skipped, and none of them stops it.
//
// Backpressure: a TCP connection is read only as fast as the Handler
// returns, so a slow consumer slows the senders down (rsyslog queues
// meanwhile). UDP cannot push back: datagrams wait in a bounded queue, and
// when it is full further ones are dropped and counted; when the socket
// buffer overflows before they are read the kernel drops them, unseen by
// pagewatch (see "receive buffer errors" in netstat -su).
//
// Syslog input cannot be replayed. After a crash or restart ingest tail
// resumes a file where it stopped, because the file still holds the lines;
// a socket holds nothing once read. Whatever sat in the kernel's socket
// buffers, in the UDP queue or in a connection's buffer, or was in flight,
// when ingest died is lost, and a UDP sender never learns of it; a TCP
// sender resends only what it had not yet written to its socket. Where
// every line must count, have the web server write a file as well and
// tail that.
package syslog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/retry"
)

// Handler receives each message that parsed and passed the tags filter;
// Message.Content is valid only until it returns. It is called from
// several goroutines at once (one for UDP, one per TCP connection), so it
// must be safe for that. While it runs its TCP connection is not read and
// UDP datagrams queue up, so it should be quick, and it must return once
// the consumer shuts down: Run waits for it.
type Handler func(m *Message)

// Listener receives syslog messages on UDP, TCP or both.
type Listener struct {
	cfg     Config
	handler Handler
	logger  *slog.Logger
	metrics *metrics
	loc     *time.Location
	tags    map[string]bool // nil: every app-name
	udp     *net.UDPConn
	tcp     *net.TCPListener

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool

	ran          atomic.Bool
	queued       atomic.Int64 // bytes held by the UDP queue
	datagrams    sync.Pool
	malformedLog sampler
	overloadLog  sampler
}

// New binds the configured addresses, so that a port already in use is
// reported before anything runs, and returns a Listener that Run serves.
// A Listener whose Run is never called must be closed with Close.
func New(cfg Config, h Handler, logger *slog.Logger, reg prometheus.Registerer) (*Listener, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return nil, errors.New("ingest.tail.syslog: listen_udp or listen_tcp must be set")
	}
	if h == nil {
		return nil, errors.New("syslog: nil Handler")
	}
	loc, err := cfg.location()
	if err != nil {
		return nil, fmt.Errorf("ingest.tail.syslog.timezone: %w", err)
	}
	l := &Listener{cfg: cfg, handler: h, logger: logger, loc: loc, conns: map[net.Conn]struct{}{}}
	if len(cfg.Tags) > 0 {
		l.tags = make(map[string]bool, len(cfg.Tags))
		for _, t := range cfg.Tags {
			l.tags[t] = true
		}
	}
	if cfg.ListenUDP != "" {
		pc, err := net.ListenPacket("udp", cfg.ListenUDP)
		if err != nil {
			return nil, fmt.Errorf("ingest.tail.syslog.listen_udp: %w", err)
		}
		l.udp = pc.(*net.UDPConn)
		if cfg.UDPReadBuffer > 0 {
			if err := l.udp.SetReadBuffer(cfg.UDPReadBuffer); err != nil {
				logger.Warn("cannot set the syslog UDP receive buffer; keeping the system's", "bytes", cfg.UDPReadBuffer, "err", err)
			}
		}
	}
	if cfg.ListenTCP != "" {
		ln, err := net.Listen("tcp", cfg.ListenTCP)
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("ingest.tail.syslog.listen_tcp: %w", err)
		}
		l.tcp = ln.(*net.TCPListener)
	}
	// Registered last: a New that failed to bind can be retried with the
	// same registry.
	l.metrics = newMetrics(reg)
	return l, nil
}

// UDPAddr returns the bound UDP address (useful with port 0), or nil.
func (l *Listener) UDPAddr() net.Addr {
	if l.udp == nil {
		return nil
	}
	return l.udp.LocalAddr()
}

// TCPAddr returns the bound TCP address, or nil.
func (l *Listener) TCPAddr() net.Addr {
	if l.tcp == nil {
		return nil
	}
	return l.tcp.Addr()
}

// Run receives messages until ctx is done, then closes the sockets and
// every connection and returns once the Handler calls in progress and the
// datagrams already queued have been handled. Read and accept errors are
// logged and retried, not returned. Run may be called once.
func (l *Listener) Run(ctx context.Context) error {
	if !l.ran.CompareAndSwap(false, true) {
		return errors.New("syslog: Run called twice")
	}
	l.logger.Info("syslog listening", "udp", addrString(l.UDPAddr()), "tcp", addrString(l.TCPAddr()))
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	var wg sync.WaitGroup
	if l.udp != nil {
		queue := make(chan *datagram, l.cfg.UDPQueueBytes/(minBuffer+datagramOverhead)+1)
		wg.Go(func() {
			defer close(queue)
			l.readUDP(queue)
		})
		wg.Go(func() { l.handleUDP(queue) })
	}
	if l.tcp != nil {
		wg.Go(func() { l.acceptTCP(&wg) })
	}
	wg.Wait()
	return nil
}

// Close closes the sockets and every TCP connection. Run calls it when its
// context is done; it is safe to call more than once.
func (l *Listener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	var errs []error
	if l.udp != nil {
		errs = append(errs, l.udp.Close())
	}
	if l.tcp != nil {
		errs = append(errs, l.tcp.Close())
	}
	for c := range l.conns {
		c.Close()
	}
	return errors.Join(errs...)
}

// handle parses one message and hands it on, or counts why not.
func (l *Listener) handle(p *Parser, m *Message, data []byte, at time.Time, peer netip.AddrPort, tm *transportMetrics) {
	if err := p.Parse(data, at, m); err != nil {
		reason := "unknown" // Parse returns only *ParseError; never seen
		var pe *ParseError
		if errors.As(err, &pe) {
			reason = pe.Reason
		}
		l.reject(reason, tm.name, peer, data)
		return
	}
	if l.tags != nil && !l.tags[m.AppName] {
		l.metrics.filtered.Inc()
		return
	}
	m.Transport, m.Peer = tm.name, peer
	l.handler(m)
	tm.delivered.Inc()
}

// reject counts a malformed message and logs a sample of it, at most one
// a second, so that a flood of junk cannot flood the log too.
func (l *Listener) reject(reason, transport string, peer netip.AddrPort, data []byte) {
	l.metrics.malformedFor(reason).Inc()
	if ok, held := l.malformedLog.allow(); ok {
		l.logger.Warn("malformed syslog message skipped", "reason", reason, "transport", transport,
			"peer", peer.String(), "bytes", len(data), "sample", string(data[:min(len(data), 200)]),
			"not_logged_since_last", held)
	}
}

// sampler lets one event a second through and counts those it held back.
type sampler struct {
	next atomic.Int64 // unix nanoseconds from which the next event passes
	held atomic.Int64
}

func (s *sampler) allow() (ok bool, held int64) {
	now := time.Now().UnixNano()
	next := s.next.Load()
	if now < next || !s.next.CompareAndSwap(next, now+int64(time.Second)) {
		s.held.Add(1)
		return false, 0
	}
	return true, s.held.Swap(0)
}

// backoff is the pause after a failed read or accept, failures being the
// ones in a row before it: pagewatch's one policy (broker/retry), from
// 5 ms doubling up to 1 s, enough to keep a persistent error (out of file
// descriptors) from spinning.
func backoff(failures int) time.Duration {
	return retry.Delay(failures, 5*time.Millisecond, time.Second)
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
