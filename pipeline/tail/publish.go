package tail

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/retry"
)

// position is how far a file has been published, as the stream records it.
type position struct {
	id  identity
	end int64
	seq uint64
	at  time.Time // when it was published
	// eof: the file was complete at end (deleted, or a rotated sibling
	// read to its end), so nothing of it is left to read.
	eof bool
}

func (fw *follower) lastPosition(ctx context.Context) (*position, error) {
	return fw.positionOn(ctx, fw.subject)
}

// positionOn reads the last message on subject; nil when it has none.
func (fw *follower) positionOn(ctx context.Context, subject string) (*position, error) {
	msg, err := fw.stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("last message on %s: %w", subject, err)
	}
	id, end, err := parsePosition(msg.Header)
	if err != nil {
		return nil, fmt.Errorf("message %d on %s: %w", msg.Sequence, subject, err)
	}
	return &position{id: id, end: end, seq: msg.Sequence, at: msg.Time, eof: msg.Header.Get(HeaderEOF) != ""}, nil
}

func parsePosition(h nats.Header) (identity, int64, error) {
	id, err := parseIdentity(h.Get(HeaderFile))
	if err != nil {
		return identity{}, 0, err
	}
	end, err := strconv.ParseInt(h.Get(HeaderEnd), 10, 64)
	if err != nil || end < 0 {
		return identity{}, 0, fmt.Errorf("bad %s header %q", HeaderEnd, h.Get(HeaderEnd))
	}
	return id, end, nil
}

// publishEOF publishes the batch (possibly empty) as the last of a file
// that is complete: a later run need not open the file again.
func (fw *follower) publishEOF(ctx context.Context) error {
	fw.eof = true
	defer func() { fw.eof = false }()
	return fw.publish(ctx)
}

// publish sends the batch (possibly empty: a position marker) and waits
// until it and the batch before it are stored. It retries until they are
// or ctx ends: the file is the buffer while JetStream is away, so nothing
// is lost by waiting.
func (fw *follower) publish(ctx context.Context) error {
	if err := fw.send(ctx); err != nil {
		return err
	}
	return fw.settle(ctx)
}

// flight is a batch on its way to JetStream. One goroutine publishes it
// (deliver) while the follower reads, parses and encodes the next batch,
// so reading and JetStream's storing overlap.
//
// Only one batch flies at a time, because every publish is conditional on
// the sequence of the subject's last message, and JetStream numbers the
// messages of all subjects of the stream together: the sequence the next
// batch must expect is the one this batch gets, known only from its ack.
// Chaining the condition through every batch is what fences a tailer
// that lost its lease, and what tells a retry whose first attempt landed
// from one that did not (landed), so it is not traded for a deeper
// pipeline: a batch sent before its predecessor's ack could land after a
// failed predecessor, leaving a gap no restart could see.
type flight struct {
	msg    *nats.Msg
	id     identity // the file's, as the message names it
	start  int64    // the message's Pagewatch-Start
	end    int64    // the message's Pagewatch-End
	lines  int
	expect uint64 // the subject's last sequence the publish is conditional on

	done chan struct{}
	seq  uint64 // the batch's sequence, once done without err
	err  error
}

// send waits for the batch before this one to be stored, seals this one
// into a message and starts publishing it; the next batch is encoded into
// the other buffer meanwhile. settle waits for it.
func (fw *follower) send(ctx context.Context) error {
	if err := fw.settle(ctx); err != nil {
		return err
	}
	// A finished file's identity was taken whole when it was opened (from
	// the decompressed head for .gz, whose own inode and bytes are not
	// the ones the identity describes).
	if !fw.finished && fw.id.fpLen < fingerprintLen {
		id, err := identify(fw.f)
		if err != nil {
			return err
		}
		fw.id = id
	}
	msg := &nats.Msg{Subject: fw.subject, Data: fw.batch.enc.Bytes(), Header: nats.Header{}}
	msg.Header.Set(HeaderFile, fw.id.String())
	msg.Header.Set(HeaderPath, fw.in.Path)
	msg.Header.Set(HeaderStart, strconv.FormatInt(fw.batchStart, 10))
	msg.Header.Set(HeaderEnd, strconv.FormatInt(fw.offset, 10))
	msg.Header.Set(HeaderLines, strconv.Itoa(fw.batch.lines))
	if fw.eof {
		msg.Header.Set(HeaderEOF, "1")
	}
	// The expected sequence makes the ID unique per publish and the same
	// for every retry of it: a duplicate ack means an earlier attempt of
	// this very publish landed.
	msg.Header.Set(jetstream.MsgIDHeader, fw.subject+"."+strconv.FormatUint(fw.lastSeq, 10))
	fl := &flight{msg: msg, id: fw.id, start: fw.batchStart, end: fw.offset, lines: fw.batch.lines, expect: fw.lastSeq, done: make(chan struct{})}
	fw.flying = fl
	go fw.deliver(ctx, fl)
	// The flying batch keeps its buffer until settled; the previous
	// batch's, settled above, takes the next lines.
	fw.batch.enc, fw.spare = fw.spare, fw.batch.enc
	fw.batch.reset()
	fw.batchStart = fw.offset
	return nil
}

// settle waits for the batch in flight, if any, and takes its sequence
// as the subject's last. Its error (errResync, or ctx's) is the
// follower's: the batch after it, read meanwhile, is read again.
func (fw *follower) settle(ctx context.Context) error {
	fl := fw.flying
	if fl == nil {
		return nil
	}
	<-fl.done
	fw.flying = nil
	if fl.err != nil {
		return fl.err
	}
	fw.lastSeq = fl.seq
	fw.metrics.batches.Inc()
	fw.lastPublish = time.Now()
	fw.refreshRecord(ctx)
	return nil
}

// deliver publishes fl, retrying until it is stored or ctx ends. It runs
// on a goroutine of its own, so it touches nothing of the follower that
// the follower changes meanwhile: what it needs is in fl.
func (fw *follower) deliver(ctx context.Context, fl *flight) {
	defer close(fl.done)
	expect := fl.expect
	for attempt := 0; ; attempt++ {
		pctx, cancel := context.WithTimeout(ctx, fw.cfg.PublishTimeout)
		ack, err := fw.bus.JS.PublishMsg(pctx, fl.msg, jetstream.WithExpectLastSequencePerSubject(expect))
		cancel()
		if err == nil {
			fl.seq = ack.Sequence
			return
		}
		if ctx.Err() != nil {
			fl.err = ctx.Err()
			return
		}
		if isWrongLastSequence(err) {
			seq, landed, err := fw.landed(ctx, fl)
			if errors.Is(err, errRetry) {
				// The subject emptied (its messages aged out, or the
				// stream was purged): our own offset is still right;
				// start the subject anew.
				expect = 0
				continue
			}
			switch {
			case err != nil:
				fl.err = err
			case !landed:
				fl.err = errResync
			default:
				fl.seq = seq
			}
			return
		}
		fw.metrics.retries.Inc()
		fw.logger.Warn("publish failed; retrying", "err", err, "attempt", attempt+1, "lines", fl.lines)
		if err := retry.Sleep(ctx, retry.Delay(attempt, 100*time.Millisecond, 5*time.Second)); err != nil {
			fl.err = err
			return
		}
	}
}

// landed checks whether an earlier attempt of this very publish was stored
// (its reply lost), by comparing the stream's last position with fl's; if
// so it returns the sequence it was stored at.
func (fw *follower) landed(ctx context.Context, fl *flight) (uint64, bool, error) {
	pos, err := fw.lastPosition(ctx)
	if err != nil {
		return 0, false, err
	}
	if pos == nil {
		return 0, false, errRetry
	}
	if pos.end == fl.end && pos.id.dev == fl.id.dev && pos.id.ino == fl.id.ino && pos.id.fp == fl.id.fp {
		return pos.seq, true, nil
	}
	return 0, false, nil
}

// errRetry asks publish to try again at once with the updated sequence.
var errRetry = errors.New("retry publish")

func isWrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) &&
		(apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

func retrying[T any](ctx context.Context, fw *follower, what string, f func() (T, error)) (T, error) {
	for attempt := 0; ; attempt++ {
		v, err := f()
		if err == nil || ctx.Err() != nil {
			return v, err
		}
		fw.logger.Warn(what+" failed; retrying", "err", err, "attempt", attempt+1)
		if err := retry.Sleep(ctx, retry.Delay(attempt, 100*time.Millisecond, 5*time.Second)); err != nil {
			return v, err
		}
	}
}
