package tail

import (
	"context"
	"errors"
	"fmt"
	"os"
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
}

func (fw *follower) lastPosition(ctx context.Context) (*position, error) {
	msg, err := fw.stream.GetLastMsgForSubject(ctx, fw.subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("last message on %s: %w", fw.subject, err)
	}
	id, err := parseIdentity(msg.Header.Get(HeaderFile))
	if err != nil {
		return nil, fmt.Errorf("message %d on %s: %w", msg.Sequence, fw.subject, err)
	}
	end, err := strconv.ParseInt(msg.Header.Get(HeaderEnd), 10, 64)
	if err != nil || end < 0 {
		return nil, fmt.Errorf("message %d on %s: bad %s header %q", msg.Sequence, fw.subject, HeaderEnd, msg.Header.Get(HeaderEnd))
	}
	return &position{id: id, end: end, seq: msg.Sequence, at: msg.Time}, nil
}

// publish sends the batch (possibly empty: a position marker) and starts a
// new one. It retries until it succeeds or ctx ends: the file is the buffer
// while JetStream is away, so nothing is lost by waiting.
func (fw *follower) publish(ctx context.Context) error {
	if fw.id.fpLen < fingerprintLen {
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

// checkRotation looks at the path after the file was read to its end. It
// reports whether the follower moved to another file or offset.
func (fw *follower) checkRotation(ctx context.Context) (bool, error) {
	same, exists := sameInode(fw.in.Path, fw.f)
	switch {
	case exists && !same:
		// A successor appeared (logrotate's create), but the server keeps
		// writing the old file until it reopens its logs: drain the old one
		// until it has been quiet for rotate_grace.
		if fw.rotatedAt.IsZero() {
			fw.rotatedAt = time.Now()
			fw.logger.Info("successor file appeared; draining the rotated file first", "rotate_grace", fw.cfg.RotateGrace)
		}
		if time.Since(fw.rotatedAt) < fw.cfg.RotateGrace || time.Since(fw.lastData) < fw.cfg.RotateGrace {
			return false, nil
		}
		fw.rotatedAt = time.Time{}
		return true, fw.switchFile(ctx)
	case !exists:
		// Deleted, or renamed with no successor yet: the writer may still
		// be appending to it, so keep the handle.
		return false, nil
	}
	st, err := fw.f.Stat()
	if err != nil {
		return false, fmt.Errorf("stat: %w", err)
	}
	truncated := st.Size() < fw.readPos
	if !truncated && fw.id.fpLen > 0 {
		// Truncated and written again past our offset between two polls:
		// the size does not show it, the head does.
		h, err := headHash(fw.f, fw.id.fpLen)
		if err != nil {
			return false, err
		}
		truncated = h != fw.id.fp
	}
	if !truncated {
		return false, nil
	}
	fw.metrics.rotations.WithLabelValues("truncate").Inc()
	fw.logger.Info("file truncated; reading it from the beginning", "old_offset", fw.offset)
	if fw.id, err = identify(fw.f); err != nil {
		return false, err
	}
	fw.offset, fw.readPos, fw.batchStart = 0, 0, 0
	fw.pending, fw.skipping = fw.pending[:0], false
	return true, nil
}

// switchFile finishes the rotated-away file and opens its successor.
func (fw *follower) switchFile(ctx context.Context) error {
	for {
		n, err := fw.readLines(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	if len(fw.pending) > 0 && !fw.skipping {
		// The last line of a finished file may lack its newline.
		fw.consume(fw.pending, fw.offset)
		fw.offset += int64(len(fw.pending))
		fw.pending = fw.pending[:0]
	}
	if fw.lines > 0 {
		if err := fw.publish(ctx); err != nil {
			return err
		}
	}
	next, err := os.Open(fw.in.Path)
	if err != nil {
		return fmt.Errorf("open successor: %w", err)
	}
	fw.f.Close()
	fw.f = next
	if fw.id, err = identify(next); err != nil {
		return err
	}
	fw.metrics.rotations.WithLabelValues("rename").Inc()
	fw.logger.Info("file rotated; following its successor", "file_id", fw.id.String())
	fw.offset, fw.readPos, fw.batchStart = 0, 0, 0
	fw.pending, fw.skipping = fw.pending[:0], false
	return nil
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
