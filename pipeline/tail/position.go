package tail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/retry"
	"github.com/pagewatch/pagewatch/domain/hit"
)

// savedPosition is how far a file has been published, as the stream
// records it.
type savedPosition struct {
	id  identity
	end int64
	seq uint64
	at  time.Time // when it was published
	// eof: the file was complete at end (deleted, or a rotated sibling
	// read to its end), so nothing of it is left to read.
	eof bool
}

// position is the layer of a file's follower above its reader: where the
// file stands on its subject (the last message there) and the conditional
// publishes that move it on. The stream is the only record of a
// position, so reading it back is reading that last message.
type position struct {
	js      publisher
	stream  jetstream.Stream
	metrics *metrics
	logger  *slog.Logger
	timeout time.Duration // each publish attempt's
	path    string        // Pagewatch-Path of the messages
	source  string        // Pagewatch-Source of the messages
	subject string

	lastSeq     uint64 // stream sequence of the last message on subject
	lastPublish time.Time
	// While one batch is on its way to JetStream (flying), the next is
	// encoded into the other buffer (spare holds the flying one's).
	flying *flight
	spare  hit.Encoder
	// stored, when set, is called after each batch is stored: the lease
	// rewrites the file's record, which must live as long as the positions.
	stored func(ctx context.Context)
	// storedEnd is how far the batches this position stored reached, in the
	// file storedID (its dev and ino).
	storedEnd int64
	storedID  identity
	// again is how far this position had stored, or tried to, in the file
	// againID, when it found the stream behind it: at a resync (a publish
	// refused for the subject's last sequence) or when it read its
	// position back, as after NATS forgot writes it had acknowledged (a
	// restart after a power cut). What it publishes of that file below
	// again may have been published, and loaded, before
	// (hit.HeaderAgain).
	again   int64
	againID identity
}

// publisher is the part of JetStream a position publishes through.
type publisher interface {
	PublishMsg(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error)
}

func newPosition(env *fileEnv, path, subject string, logger *slog.Logger) position {
	return position{js: env.bus.JS, stream: env.stream, metrics: env.metrics, logger: logger,
		timeout: env.cfg.PublishTimeout, path: path, subject: subject}
}

// resume takes a saved position (nil: none) as the subject's last.
func (p *position) resume(saved *savedPosition) {
	p.lastSeq, p.lastPublish = 0, time.Now()
	if saved != nil {
		p.lastSeq, p.lastPublish = saved.seq, saved.at
	}
	if p.storedEnd > 0 && (saved == nil || saved.end < p.storedEnd) {
		p.publishedBefore(p.storedID, p.storedEnd)
	}
}

// publishedBefore notes that the file id may have been published up to
// end by this position in messages the stream no longer holds.
func (p *position) publishedBefore(id identity, end int64) {
	if !oneInode(id, p.againID) {
		p.again = 0
	}
	p.again, p.againID = max(p.again, end), id
}

func oneInode(a, b identity) bool { return a.dev == b.dev && a.ino == b.ino }

func (p *position) last(ctx context.Context) (*savedPosition, error) {
	return p.on(ctx, p.subject)
}

// on reads the last message on subject; nil when it has none.
func (p *position) on(ctx context.Context, subject string) (*savedPosition, error) {
	msg, err := p.stream.GetLastMsgForSubject(ctx, subject)
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
	return &savedPosition{id: id, end: end, seq: msg.Sequence, at: msg.Time, eof: msg.Header.Get(HeaderEOF) != ""}, nil
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

// launch seals b into a message covering [start, end) of the file id and
// starts publishing it; the next batch is encoded into the other buffer
// meanwhile. The batch before must be settled; settle waits for this one.
func (p *position) launch(ctx context.Context, b *hitBatch, id identity, start, end int64, eof bool) {
	msg := &nats.Msg{Subject: p.subject, Data: b.enc.Bytes(), Header: nats.Header{}}
	msg.Header.Set(HeaderFile, id.String())
	msg.Header.Set(HeaderPath, p.path)
	if p.source != "" {
		msg.Header.Set(HeaderSource, p.source)
	}
	msg.Header.Set(HeaderStart, strconv.FormatInt(start, 10))
	msg.Header.Set(HeaderEnd, strconv.FormatInt(end, 10))
	msg.Header.Set(HeaderLines, strconv.Itoa(b.lines))
	if eof {
		msg.Header.Set(HeaderEOF, "1")
	}
	if start < p.again && oneInode(id, p.againID) {
		msg.Header.Set(hit.HeaderAgain, strconv.FormatInt(p.again, 10))
	}
	// The expected sequence makes the ID unique per publish and the same
	// for every retry of it: a duplicate ack means an earlier attempt of
	// this very publish landed.
	msg.Header.Set(jetstream.MsgIDHeader, p.subject+"."+strconv.FormatUint(p.lastSeq, 10))
	fl := &flight{msg: msg, id: id, start: start, end: end, lines: b.lines, expect: p.lastSeq, done: make(chan struct{})}
	p.flying = fl
	go p.deliver(ctx, fl)
	// The flying batch keeps its buffer until settled; the previous
	// batch's, settled already, takes the next lines.
	b.enc, p.spare = p.spare, b.enc
	b.reset()
}

// published is where the bytes not yet stored in JetStream start: the
// start of the batch in flight, or else reading (the batch being read).
func (p *position) published(reading int64) int64 {
	if p.flying != nil {
		return p.flying.start
	}
	return reading
}

// settle waits for the batch in flight, if any, and takes its sequence
// as the subject's last. Its error (errResync, or ctx's) is the
// follower's: the batch after it, read meanwhile, is read again.
func (p *position) settle(ctx context.Context) error {
	fl := p.flying
	if fl == nil {
		return nil
	}
	<-fl.done
	p.flying = nil
	if errors.Is(fl.err, errResync) {
		// An attempt of it may have landed, and been forgotten.
		p.publishedBefore(fl.id, fl.end)
	}
	if fl.err != nil {
		return fl.err
	}
	if !oneInode(fl.id, p.storedID) {
		p.storedEnd = 0
	}
	p.storedEnd, p.storedID = max(p.storedEnd, fl.end), fl.id
	p.lastSeq = fl.seq
	p.metrics.batches.Inc()
	p.lastPublish = time.Now()
	if p.stored != nil {
		p.stored(ctx)
	}
	return nil
}

// deliver publishes fl, retrying until it is stored or ctx ends. It runs
// on a goroutine of its own, so it touches nothing of the position that
// the follower changes meanwhile: what it needs is in fl.
func (p *position) deliver(ctx context.Context, fl *flight) {
	defer close(fl.done)
	expect := fl.expect
	for attempt := 0; ; attempt++ {
		pctx, cancel := context.WithTimeout(ctx, p.timeout)
		ack, err := p.js.PublishMsg(pctx, fl.msg, jetstream.WithExpectLastSequencePerSubject(expect))
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
			seq, landed, err := p.landed(ctx, fl)
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
		p.metrics.retries.Inc()
		p.logger.Warn("publish failed; retrying", "err", err, "attempt", attempt+1, "lines", fl.lines)
		if err := retry.Sleep(ctx, retry.Delay(attempt, 100*time.Millisecond, 5*time.Second)); err != nil {
			fl.err = err
			return
		}
	}
}

// landed checks whether an earlier attempt of this very publish was stored
// (its reply lost), by comparing the stream's last position with fl's; if
// so it returns the sequence it was stored at.
func (p *position) landed(ctx context.Context, fl *flight) (uint64, bool, error) {
	pos, err := p.last(ctx)
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

// retrying calls f until it succeeds or ctx ends: NATS being away is
// waited out, since the file keeps the lines meanwhile.
func retrying[T any](ctx context.Context, logger *slog.Logger, what string, f func() (T, error)) (T, error) {
	for attempt := 0; ; attempt++ {
		v, err := f()
		if err == nil || ctx.Err() != nil {
			return v, err
		}
		logger.Warn(what+" failed; retrying", "err", err, "attempt", attempt+1)
		if err := retry.Sleep(ctx, retry.Delay(attempt, 100*time.Millisecond, 5*time.Second)); err != nil {
			return v, err
		}
	}
}
