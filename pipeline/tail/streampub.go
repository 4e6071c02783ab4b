package tail

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/retry"
)

// publish sends one batch of a stream, retrying until it is stored or ctx
// ends. Reading has stopped meanwhile if every publisher is here, which
// is what holds the lines back while NATS is away.
//
// A retry carries the batch's message ID, so when an earlier attempt was
// stored (its ack lost) JetStream answers "duplicate" and stores nothing.
// But JetStream remembers IDs only for its duplicate window (2 minutes),
// and an attempt stored just before NATS went away for longer would be
// stored again by the retry after. So nothing is sent while the
// connection is down (the client would buffer it and send it on
// reconnect, before any check), and a retry more than half the window
// after the first attempt first looks for the batch among the subject's
// messages stored since then.
//
// What neither covers: an attempt already on its way when the connection
// failed (in the client's buffer as it noticed, or held by TCP through a
// partition shorter than the client's ping timeout) that reaches
// JetStream after the window. That is the one way a batch of a stream can
// be stored twice; files are immune, as their publishes are conditional
// on the subject's last sequence, which a stream shared by processes
// cannot use.
func (s *stream) publish(ctx context.Context, b *batch) error {
	id := b.msg.Header.Get(jetstream.MsgIDHeader)
	for attempt := 0; ; attempt++ {
		if err := s.connected(ctx); err != nil {
			return err
		}
		if b.sent.IsZero() {
			b.floor = s.acked.Load() // anything stored from now on lands above it
			b.sent = time.Now()
		} else if time.Since(b.sent) > s.env.dedup/2 {
			landed, err := s.landed(ctx, b.floor, id)
			if err == nil && landed {
				break
			}
			// Unknown (NATS gone again): the attempt below fails too,
			// or the ID is still remembered; either way nothing doubles.
		}
		pctx, cancel := context.WithTimeout(ctx, s.env.cfg.PublishTimeout)
		ack, err := s.env.bus.JS.PublishMsg(pctx, b.msg)
		cancel()
		if err == nil {
			s.sawSeq(ack.Sequence)
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.env.metrics.retries.Inc()
		s.logger.Warn("publish failed; retrying (reading is paused while all publishers retry)",
			"err", err, "attempt", attempt+1, "lines", b.lines, "msg_id", id)
		if err := retry.Sleep(ctx, retry.Delay(attempt, 100*time.Millisecond, 5*time.Second)); err != nil {
			return err
		}
	}
	s.env.metrics.batches.Inc()
	s.lastPublish.Store(time.Now().UnixNano())
	return nil
}

// connected waits until the NATS connection is up.
func (s *stream) connected(ctx context.Context) error {
	for !s.env.bus.Conn.IsConnected() {
		if err := retry.Sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// sawSeq raises acked to seq.
func (s *stream) sawSeq(seq uint64) {
	for {
		cur := s.acked.Load()
		if seq <= cur || s.acked.CompareAndSwap(cur, seq) {
			return
		}
	}
}

// landed reports whether the stream holds a message with ID id on the
// stream's subject above sequence floor. Only this process's batches in
// flight and those of other processes on the same subject since are
// looked at, a few messages.
func (s *stream) landed(ctx context.Context, floor uint64, id string) (bool, error) {
	for seq := floor + 1; ; {
		gctx, cancel := context.WithTimeout(ctx, s.env.cfg.PublishTimeout)
		m, err := s.env.hits.GetMsg(gctx, seq, jetstream.WithGetMsgSubject(s.subject))
		cancel()
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if m.Header.Get(jetstream.MsgIDHeader) == id {
			s.sawSeq(m.Sequence)
			return true, nil
		}
		seq = m.Sequence + 1
	}
}
