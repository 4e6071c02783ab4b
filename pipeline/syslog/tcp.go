package syslog

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// acceptTCP accepts connections until the listener is closed, serving each
// in its own goroutine counted in wg.
func (l *Listener) acceptTCP(wg *sync.WaitGroup) {
	var failures int
	for {
		c, err := l.tcp.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			pause := backoff(failures)
			failures++
			l.logger.Warn("syslog TCP accept failed; retrying", "err", err, "retry_in", pause)
			time.Sleep(pause)
			continue
		}
		failures = 0
		if l.track(c) {
			wg.Go(func() { l.serveTCP(c) })
		}
	}
}

// track records an accepted connection, or closes it when the listener is
// closed or max_tcp_connections are open. A refused sender reconnects
// later: rsyslog and syslog-ng retry, keeping their queue meanwhile.
func (l *Listener) track(c net.Conn) bool {
	l.mu.Lock()
	closed, full := l.closed, len(l.conns) >= l.cfg.MaxTCPConnections
	if !closed && !full {
		l.conns[c] = struct{}{}
		l.metrics.conns.Inc()
	}
	l.mu.Unlock()
	// Counted and logged before the close, so whoever sees the connection
	// end also sees it counted.
	if full && !closed {
		l.metrics.rejected.Inc()
		if ok, held := l.overloadLog.allow(); ok {
			l.logger.Warn("syslog TCP connection refused: max_tcp_connections are open",
				"peer", c.RemoteAddr().String(), "max_tcp_connections", l.cfg.MaxTCPConnections, "not_logged_since_last", held)
		}
	}
	if closed || full {
		c.Close()
	}
	return !closed && !full
}

func (l *Listener) untrack(c net.Conn) {
	c.Close()
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
	l.metrics.conns.Dec()
}

// serveTCP reads frames off one connection and handles each before reading
// on, which is what pushes back on a sender faster than the handler.
func (l *Listener) serveTCP(c net.Conn) {
	defer l.untrack(c)
	var peer netip.AddrPort
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		peer = a.AddrPort()
		peer = netip.AddrPortFrom(peer.Addr().Unmap(), peer.Port())
	}
	tm := &l.metrics.tcp
	f := newFramer(&idleReader{c: c, idle: l.cfg.TCPIdleTimeout, bytes: tm.bytes}, l.cfg.MaxMessageBytes)
	p := Parser{Location: l.loc}
	var m Message
	for {
		frame, err := f.next()
		switch {
		case err == nil:
			tm.received.Inc()
			l.handle(&p, &m, frame, time.Now(), peer, tm)
			continue
		case errors.Is(err, errTooLong):
			tm.received.Inc()
			l.reject(ReasonTooLong, tm.name, peer, f.unread())
			continue
		case errors.Is(err, errBadLength):
			tm.received.Inc()
			l.reject(ReasonFraming, tm.name, peer, f.unread())
		case f.pending():
			tm.received.Inc()
			l.reject(ReasonTruncated, tm.name, peer, f.unread())
		}
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			l.logger.Debug("closing idle syslog connection", "peer", peer.String(), "tcp_idle_timeout", l.cfg.TCPIdleTimeout)
		case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, errBadLength):
		default:
			l.logger.Debug("syslog connection failed", "peer", peer.String(), "err", err)
		}
		return
	}
}

// idleReader renews the read deadline before every read, which makes
// tcp_idle_timeout a limit on silence rather than on a connection's life.
type idleReader struct {
	c     net.Conn
	idle  time.Duration
	bytes prometheus.Counter
}

func (r *idleReader) Read(b []byte) (int, error) {
	if err := r.c.SetReadDeadline(time.Now().Add(r.idle)); err != nil {
		return 0, err
	}
	n, err := r.c.Read(b)
	if n > 0 {
		r.bytes.Add(float64(n))
	}
	return n, err
}
