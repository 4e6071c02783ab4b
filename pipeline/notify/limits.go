package notify

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/broker/ratelimit"
	"github.com/pagewatch/pagewatch/broker/retry"
	"github.com/pagewatch/pagewatch/domain/crossing"
)

// awaitSlot is the rate-limit step: every recipient must be under its own
// limit and the account under the global one. A recipient whose next slot
// is far off sends the job back to wait its turn in JetStream, so no
// runner sleeps for long; nothing is dropped. It reports whether to send.
func (w *Worker) awaitSlot(ctx context.Context, msg jetstream.Msg, x crossing.Crossing) bool {
	limits := w.cfg.RateLimit
	// Waits longer than this go back to the queue: well inside ack_wait
	// and short enough that a runner holding a page lock keeps moving.
	maxWait := min(w.cfg.AckWait/4, 10*time.Second)
	var wait time.Duration
	for _, rcpt := range x.Recipients {
		slot, ok, err := w.limiter.TryReserve(ctx, ratelimit.Recipient(rcpt), limits.PerRecipient, maxWait)
		if err != nil {
			w.logger.Warn("rate limit unavailable; job will be redelivered", "key", x.Key, "err", err)
			_ = msg.NakWithDelay(w.cfg.DeferDelay)
			return false
		}
		if !ok {
			// Slots claimed for other recipients of this mail are lost
			// capacity, never an extra send.
			_ = msg.NakWithDelay(slot.Wait)
			w.metrics.jobs.WithLabelValues(string(crossing.RateLimited)).Inc()
			w.record(x, crossing.Record{Outcome: crossing.RateLimited, Error: fmt.Sprintf("recipient over its limit; next slot in %s", slot.Wait.Round(time.Second))})
			return false
		}
		wait = max(wait, slot.Wait)
	}
	if err := retry.Sleep(ctx, wait); err != nil {
		_ = msg.Nak()
		return false
	}
	// The global slot is claimed last: claiming it before a recipient's
	// wait would push every other worker's sends back too.
	if err := w.limiter.Wait(ctx, ratelimit.Global(), limits.Global); err != nil {
		w.logger.Warn("global rate limit unavailable; job will be redelivered", "key", x.Key, "err", err)
		_ = msg.NakWithDelay(w.cfg.DeferDelay)
		return false
	}
	return true
}

// deadLetter keeps a job that failed for good (the SMTP server refused
// it permanently) in the dead-letter stream with the reason, records it,
// and terminates it.
func (w *Worker) deadLetter(ctx context.Context, msg jetstream.Msg, x crossing.Crossing, rec crossing.Record) {
	dl := nats.NewMsg(w.bus.DeadLetterSubject("jobs"))
	dl.Data = msg.Data()
	dl.Header.Set(bus.HeaderDeadReason, rec.Error)
	dl.Header.Set(bus.HeaderDeadSubject, msg.Subject())
	dl.Header.Set(nats.MsgIdHdr, "jobs."+x.Key)
	if meta, err := msg.Metadata(); err == nil {
		dl.Header.Set(bus.HeaderDeadSeq, fmt.Sprint(meta.Sequence.Stream))
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := w.bus.JS.PublishMsg(pctx, dl); err != nil {
		w.logger.Error("dead-letter publish failed; the job will be retried", "key", x.Key, "err", err)
		_ = msg.NakWithDelay(time.Minute)
		return
	}
	w.logger.Error("send failed permanently; job dead-lettered", "key", x.Key, "smtp_code", rec.SMTPCode, "err", rec.Error)
	_ = msg.TermWithReason(fmt.Sprintf("smtp %d", rec.SMTPCode))
	rec.Outcome = crossing.DeadLettered
	w.metrics.jobs.WithLabelValues(string(crossing.DeadLettered)).Inc()
	w.record(x, rec)
}
