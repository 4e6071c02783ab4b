package tail

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/pipeline/retry"
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

// publish sends the batch (possibly empty: a position marker) and starts a
// new one. It retries until it succeeds or ctx ends: the file is the buffer
// while JetStream is away, so nothing is lost by waiting.
func (fw *follower) publish(ctx context.Context) error {
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
	msg := &nats.Msg{Subject: fw.subject, Data: fw.enc.Bytes(), Header: nats.Header{}}
	msg.Header.Set(HeaderFile, fw.id.String())
	msg.Header.Set(HeaderPath, fw.in.Path)
	msg.Header.Set(HeaderStart, strconv.FormatInt(fw.batchStart, 10))
	msg.Header.Set(HeaderEnd, strconv.FormatInt(fw.offset, 10))
	msg.Header.Set(HeaderLines, strconv.Itoa(fw.lines))
	if fw.eof {
		msg.Header.Set(HeaderEOF, "1")
	}
	// The expected sequence makes the ID unique per publish and the same
	// for every retry of it: a duplicate ack means an earlier attempt of
	// this very publish landed.
	msg.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%s.%d", fw.subject, fw.lastSeq))

	for attempt := 0; ; attempt++ {
		pctx, cancel := context.WithTimeout(ctx, fw.cfg.PublishTimeout)
		ack, err := fw.bus.JS.PublishMsg(pctx, msg, jetstream.WithExpectLastSequencePerSubject(fw.lastSeq))
		cancel()
		if err == nil {
			fw.lastSeq = ack.Sequence
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if isWrongLastSequence(err) {
			landed, err := fw.landed(ctx)
			if errors.Is(err, errRetry) {
				continue
			}
			if err != nil {
				return err
			}
			if !landed {
				return errResync
			}
			break
		}
		fw.metrics.retries.Inc()
		fw.logger.Warn("publish failed; retrying", "err", err, "attempt", attempt+1, "lines", fw.lines)
		if err := retry.Sleep(ctx, retry.Delay(attempt, 100*time.Millisecond, 5*time.Second)); err != nil {
			return err
		}
	}
	fw.metrics.batches.Inc()
	fw.lastPublish = time.Now()
	fw.refreshRecord(ctx)
	fw.enc.Reset()
	fw.lines = 0
	fw.batchStart = fw.offset
	return nil
}

// landed checks whether an earlier attempt of this very publish was stored
// (its reply lost), by comparing the stream's last position with ours.
func (fw *follower) landed(ctx context.Context) (bool, error) {
	pos, err := fw.lastPosition(ctx)
	if err != nil {
		return false, err
	}
	if pos == nil {
		// The subject emptied (its messages aged out, or the stream was
		// purged): our own offset is still right; start the subject anew.
		fw.lastSeq = 0
		return false, errRetry
	}
	if pos.end == fw.offset && pos.id.dev == fw.id.dev && pos.id.ino == fw.id.ino && pos.id.fp == fw.id.fp {
		fw.lastSeq = pos.seq
		return true, nil
	}
	return false, nil
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
