package load

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/hit"
)

// batch is what one insert carries: the decoded hits and the messages
// they came in, which are acknowledged once the insert succeeded.
type batch struct {
	msgs  []jetstream.Msg
	hits  []hit.Batch
	rows  int
	bytes int
	leans leanList // where its decoded hits go back

	stopKeepAlive func()
}

// keepAlive sends progress acks every interval until the batch is acked
// or given back, so a batch that waits for a slow or down ClickHouse is
// not redelivered to another loader meanwhile.
func (b *batch) keepAlive(interval time.Duration) {
	stop := make(chan struct{})
	var once sync.Once
	b.stopKeepAlive = func() { once.Do(func() { close(stop) }) }
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				for _, m := range b.msgs {
					_ = m.InProgress()
				}
			}
		}
	}()
}

func (b *batch) stop() {
	if b.stopKeepAlive != nil {
		b.stopKeepAlive()
	}
}

// ack acknowledges every message. A lost ack only means a redelivery,
// which the store absorbs.
func (b *batch) ack(logger *slog.Logger) {
	b.stop()
	for _, m := range b.msgs {
		if err := m.Ack(); err != nil {
			logger.Warn("ack failed; the message will be delivered again", "err", err)
		}
	}
	b.release()
}

// giveBack hands the messages back for immediate redelivery rather than
// after AckWait.
func (b *batch) giveBack() {
	b.stop()
	for _, m := range b.msgs {
		_ = m.Nak()
	}
	b.release()
}

// leanList reuses decoded messages once their batch is done with: a
// message of 5,000 hits is some 190 KB of them, otherwise allocated afresh
// for every message. Unlike a sync.Pool it is not emptied by garbage
// collections, which come every few batches. Each loader has its own,
// sized by newLeanList.
type leanList chan *hit.Lean

// messageHits is how many hits a message is taken to hold in sizing a
// loader's leanList: the default of ingest.tail.batch_lines, which is the
// publishing tails' setting, not the loader's.
const messageHits = 5000

// newLeanList keeps what a loader holds at once: inserts batches being
// inserted, one handed over and one being collected, each of batch_rows
// hits in messages of messageHits (with the default settings, 4 batches
// of 20 messages).
func newLeanList(cfg Config) leanList {
	perBatch := (cfg.BatchRows + messageHits - 1) / messageHits
	return make(leanList, (cfg.Inserts+2)*max(1, perBatch))
}

func (f leanList) get() *hit.Lean {
	select {
	case l := <-f:
		return l
	default:
		return new(hit.Lean)
	}
}

func (f leanList) put(l *hit.Lean) {
	l.Text = ""
	select {
	case f <- l:
	default:
	}
}

// release returns the batch's decoded hits to its leanList, dropping the
// message data they alias.
func (b *batch) release() {
	for i := range b.hits {
		if l := b.hits[i].Lean; l != nil {
			b.leans.put(l)
		}
	}
	b.hits = nil
}

// collect fetches messages until the batch is full or old enough. A fetch
// error ends the batch early; what was collected is still returned. It
// returns a nil batch when nothing arrived.
func (l *Loader) collect(ctx context.Context) (*batch, error) {
	b := &batch{leans: l.leans}
	var deadline time.Time
	seen := map[uint64]bool{}
	for b.rows < l.cfg.BatchRows && b.bytes < l.cfg.BatchBytes {
		wait := l.cfg.BatchAge
		if !deadline.IsZero() {
			wait = time.Until(deadline)
			if wait <= 0 {
				break
			}
		}
		fctx, cancel := context.WithTimeout(ctx, max(wait, 20*time.Millisecond))
		// Ask for about as many messages as the batch still has room for,
		// in rows and in bytes, judged by the messages so far. Not with
		// FetchMaxBytes: on a NATS cluster (nats-server 2.15, replicated
		// consumer) a fetch with max_bytes set delivered nothing, only
		// "batch completed", while the consumer counted the messages as
		// delivered (TestClusterLoaderLoadsFromAnR3Stream).
		fetched, err := l.consumer().Fetch(l.fetchSize(b), jetstream.FetchContext(fctx))
		if err != nil {
			cancel()
			return b.orNil(), err
		}
		for m := range fetched.Messages() {
			if deadline.IsZero() {
				deadline = time.Now().Add(l.cfg.BatchAge)
			}
			hb, ok := l.decode(ctx, m)
			if !ok {
				continue
			}
			if seen[hb.MsgKey()] {
				// Redelivered while we were still collecting, or the same
				// lines published again in another message: one copy per
				// insert, or its per-minute counts would add up twice. Not
				// acked: acking any delivery acks the message, and ours is
				// not inserted yet; a later batch loads it, changing nothing.
				continue
			}
			seen[hb.MsgKey()] = true
			b.msgs = append(b.msgs, m)
			b.hits = append(b.hits, hb)
			b.rows += hb.Len()
			b.bytes += len(m.Data())
		}
		cancel()
		if ctx.Err() != nil {
			return b.orNil(), ctx.Err()
		}
		if err := fetched.Error(); err != nil && !idle(err) {
			return b.orNil(), err
		}
		if deadline.IsZero() {
			return nil, nil // nothing arrived: go round again
		}
	}
	return b.orNil(), nil
}

func (b *batch) orNil() *batch {
	if len(b.msgs) == 0 {
		return nil
	}
	return b
}

// fetchSize is how many messages to request next: the batch's remaining
// rows over the rows per message seen so far, and its remaining bytes over
// the bytes per message, whichever is fewer, within [1, 1000].
func (l *Loader) fetchSize(b *batch) int {
	if len(b.msgs) == 0 || b.rows == 0 {
		return 1 // one message to learn their size; the next fetch adapts
	}
	perMsg := max(1, b.rows/len(b.msgs))
	byRows := (l.cfg.BatchRows - b.rows + perMsg - 1) / perMsg
	perMsgBytes := max(1, b.bytes/len(b.msgs))
	byBytes := (l.cfg.BatchBytes - b.bytes + perMsgBytes - 1) / perMsgBytes
	return min(1000, max(1, min(byRows, byBytes)))
}

// idle reports whether a fetch error only means "nothing arrived in time".
func idle(err error) bool {
	// ErrBatchCompleted is the server saying it sent the whole batch
	// (nats-server in a cluster answers a fetch with it): not a failure,
	// and backing off on it stalls the fetch loop.
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, jetstream.ErrNoMessages) || errors.Is(err, jetstream.ErrBatchCompleted)
}

// decode turns a message into a batch of hits. A message that is not one
// is dead-lettered, since no number of redeliveries would make it
// readable; if even that fails it is left for redelivery, never dropped.
func (l *Loader) decode(ctx context.Context, m jetstream.Msg) (hit.Batch, bool) {
	meta, err := m.Metadata()
	if err != nil {
		l.deadLetter(ctx, m, 0, fmt.Sprintf("no JetStream metadata: %v", err))
		return hit.Batch{}, false
	}
	if meta.NumDelivered > 1 {
		l.metrics.redeliveries.Inc()
	}
	// Decoded lean: the hits alias the message's data, which nats.go
	// allocates for each message and never reuses (nats.go v1.55.0,
	// nats.go:3930 in processMsg, or parser.go:405 for a message read in
	// pieces), and which the batch keeps until it is acked or given back.
	lean := l.leans.get()
	if err := hit.DecodeLean(m.Data(), lean); err != nil {
		l.leans.put(lean)
		l.deadLetter(ctx, m, meta.Sequence.Stream, err.Error())
		return hit.Batch{}, false
	}
	hb := hit.Batch{Seq: meta.Sequence.Stream, Lean: lean}
	hb.Key, hb.LineKey = hit.Keys(m.Headers().Get)
	if v := m.Headers().Get(hit.HeaderAgain); v != "" {
		// Unparsable: 0, counted as any message (a header only a tailer
		// sets, never seen malformed).
		hb.Again, _ = strconv.ParseUint(v, 10, 64)
	}
	return hb, true
}

// deadLetter copies m with the reason to the dead-letter stream, then
// terminates it.
func (l *Loader) deadLetter(ctx context.Context, m jetstream.Msg, seq uint64, reason string) {
	l.logger.Error("undecodable hits message; dead-lettering it", "subject", m.Subject(), "seq", seq, "reason", reason, "bytes", len(m.Data()))
	dl := nats.NewMsg(l.bus.DeadLetterSubject("hits"))
	dl.Data = m.Data()
	for k, v := range m.Headers() {
		dl.Header[k] = v
	}
	dl.Header.Set(bus.HeaderDeadReason, reason)
	dl.Header.Set(bus.HeaderDeadSubject, m.Subject())
	dl.Header.Set(bus.HeaderDeadSeq, fmt.Sprint(seq))
	if seq != 0 {
		dl.Header.Set(nats.MsgIdHdr, fmt.Sprintf("%s.%d", l.bus.HitsStreamName(), seq))
	} else {
		dl.Header.Del(nats.MsgIdHdr)
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := l.bus.JS.PublishMsg(pctx, dl); err != nil {
		l.logger.Error("dead-letter publish failed; the message will be delivered again", "subject", m.Subject(), "seq", seq, "err", err)
		_ = m.NakWithDelay(l.cfg.RetryMax)
		return
	}
	if err := m.TermWithReason(reason); err != nil {
		l.logger.Warn("terminate after dead-lettering failed; it may be dead-lettered again", "seq", seq, "err", err)
	}
	l.metrics.deadLetters.Inc()
}
