package syslog

import (
	"errors"
	"net"
	"net/netip"
	"time"
)

// datagram is one UDP message waiting in the queue for the handler.
type datagram struct {
	buf  []byte
	peer netip.AddrPort
	at   time.Time
}

const (
	// datagramOverhead is what a queued datagram costs beyond its buffer
	// (the struct, its slot in the channel). Charging it makes
	// udp_queue_bytes bound memory even for a flood of tiny datagrams.
	datagramOverhead = 64
	// minBuffer is the smallest buffer a datagram gets, so the queue never
	// holds more than udp_queue_bytes/(minBuffer+datagramOverhead).
	minBuffer = 512
	// keepBuffer is the largest buffer returned to the pool; a rare huge
	// datagram must not pin its buffer for good.
	keepBuffer = 8 << 10
)

// readUDP reads datagrams into the queue until the socket is closed. It
// does as little as possible per datagram, since while it is busy the
// kernel's buffer fills; parsing happens on the handler's side.
func (l *Listener) readUDP(queue chan<- *datagram) {
	buf := make([]byte, l.cfg.MaxMessageBytes+1) // one more, to see a datagram that is too long
	tm := &l.metrics.udp
	var failures int
	for {
		n, peer, err := l.udp.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			pause := backoff(failures)
			failures++
			l.logger.Warn("syslog UDP read failed; retrying", "err", err, "retry_in", pause)
			time.Sleep(pause)
			continue
		}
		failures = 0
		peer = netip.AddrPortFrom(peer.Addr().Unmap(), peer.Port())
		tm.received.Inc()
		tm.bytes.Add(float64(n))
		if n > l.cfg.MaxMessageBytes {
			l.reject(ReasonTooLong, tm.name, peer, buf[:n])
			continue
		}
		d := l.getDatagram(n)
		cost := int64(cap(d.buf) + datagramOverhead)
		if l.queued.Add(cost) > int64(l.cfg.UDPQueueBytes) {
			l.queued.Add(-cost)
			l.datagrams.Put(d)
			l.drop(peer)
			continue
		}
		copy(d.buf, buf[:n])
		d.peer, d.at = peer, time.Now()
		select {
		case queue <- d:
		default:
			l.queued.Add(-cost)
			l.datagrams.Put(d)
			l.drop(peer)
		}
	}
}

// handleUDP hands queued datagrams to the handler, in the order received,
// until the reader closes the queue.
func (l *Listener) handleUDP(queue <-chan *datagram) {
	p := Parser{Location: l.loc}
	var m Message
	for d := range queue {
		l.handle(&p, &m, d.buf, d.at, d.peer, &l.metrics.udp)
		l.queued.Add(-int64(cap(d.buf) + datagramOverhead))
		m.Content = nil
		if cap(d.buf) > keepBuffer {
			d.buf = nil
		}
		l.datagrams.Put(d)
	}
}

func (l *Listener) getDatagram(n int) *datagram {
	d, _ := l.datagrams.Get().(*datagram)
	if d == nil {
		d = &datagram{}
	}
	if cap(d.buf) < n {
		// Round up so that a buffer fits most later datagrams too.
		d.buf = make([]byte, n, max(minBuffer, (n+minBuffer-1)&^(minBuffer-1)))
	}
	d.buf = d.buf[:n]
	return d
}

func (l *Listener) drop(peer netip.AddrPort) {
	l.metrics.dropped.Inc()
	if ok, held := l.overloadLog.allow(); ok {
		l.logger.Warn("syslog UDP queue full: the handler is slower than the senders; datagrams dropped",
			"peer", peer.String(), "udp_queue_bytes", l.cfg.UDPQueueBytes, "not_logged_since_last", held)
	}
}
