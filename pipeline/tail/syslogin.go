package tail

import (
	"context"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/pipeline/syslog"
)

// syslogInput publishes the access-log lines that ingest.tail.syslog
// receives (nginx's `access_log syslog:server=...`, rsyslog forwarding),
// each message's content being one line in ingest.tail.syslog_input's
// format. It runs inside Run, beside the file followers.
//
// Like stdin, and unlike a file, syslog cannot be replayed: what the
// kernel's socket buffers, the listener's queue and the unacknowledged
// batches held when ingest died is lost (see package syslog). While NATS
// is away the batches stop being taken: TCP senders are no longer read
// and queue on their side, UDP datagrams are dropped and counted.
//
// Each transport has a stream of its own (its own batches, offsets and
// message IDs) on the subject of bus.Key("syslog"), so a UDP flood never
// sits in a batch that TCP's backpressure is waiting on, and offsets
// count one ordered sequence of lines each.
type syslogInput struct {
	listener *syslog.Listener
	streams  map[string]*stream // by Message.Transport: "udp", "tcp"
}

// listenSyslog binds ingest.tail.syslog's addresses when it has any, so
// that a port in use fails New rather than Run. It is also where New
// refuses a config that gives it nothing to read.
func (t *Tailer) listenSyslog(reg prometheus.Registerer) error {
	if !t.cfg.Syslog.Enabled() {
		return nil // New refused a Tailer with nothing at all to follow
	}
	env := newStreamEnv(t.cfg, t.bus, t.stream, t.logger, t.metrics, t.env.rules)
	in := &syslogInput{streams: map[string]*stream{}}
	for _, transport := range []string{"udp", "tcp"} {
		// A parser each: the streams parse concurrently, each under its
		// own lock.
		p, err := t.cfg.SyslogInput.parser(keySyslogInput)
		if err != nil {
			return err
		}
		in.streams[transport] = env.newStream("syslog-"+transport, "syslog", t.cfg.SyslogInput, p)
	}
	handle := func(m *syslog.Message) {
		if s := in.streams[m.Transport]; s != nil {
			// Counted with the newline it would have in a file.
			s.add(m.Content, len(m.Content)+1)
		}
	}
	l, err := syslog.New(t.cfg.Syslog, handle, t.logger.With("input", "syslog"), reg)
	if err != nil {
		return err
	}
	in.listener = l
	t.syslog = in
	return nil
}

// SyslogAddrs returns the addresses the syslog listener is bound to (nil
// for a transport not listened on, or without syslog): useful with port 0.
func (t *Tailer) SyslogAddrs() (udp, tcp net.Addr) {
	if t.syslog == nil {
		return nil, nil
	}
	return t.syslog.listener.UDPAddr(), t.syslog.listener.TCPAddr()
}

// startSyslog runs the syslog input until ctx is done; wait returns once
// it has stopped and published what it received (or given up on it after
// publish_timeout). A failure calls fail, to stop the followers too.
// With --backfill-only there is no syslog: that run ends with its files.
func (t *Tailer) startSyslog(ctx context.Context, fail func()) (wait func() error) {
	in := t.syslog
	if in == nil {
		return func() error { return nil }
	}
	if t.backfill != nil && t.backfill.Only {
		in.listener.Close()
		return func() error { return nil }
	}
	for _, s := range in.streams {
		s.run(ctx, t.cfg.PublishTimeout)
	}
	done := make(chan error, 1)
	go func() {
		stopTicks := make(chan struct{})
		go func() {
			tick := time.NewTicker(t.cfg.SyslogInput.FlushInterval / 2)
			defer tick.Stop()
			for {
				select {
				case <-stopTicks:
					return
				case <-tick.C:
					for _, s := range in.streams {
						s.flushOld()
					}
				}
			}
		}()
		// Returns once ctx is done and no handler runs any more.
		err := in.listener.Run(ctx)
		close(stopTicks)
		for _, s := range in.streams {
			s.close()
		}
		if err != nil {
			fail()
		}
		done <- err
	}()
	return func() error { return <-done }
}
