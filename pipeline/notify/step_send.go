package notify

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/broker/retry"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/pipeline/ledger"
)

// stepSend sends. A failure releases the claim, and is retried with
// backoff (or after the wait the receiver asked for) until the
// receiver's give_up_after, or dead-lettered at once if permanent.
func (w *Worker) stepSend(ctx context.Context, d *delivery) verdict {
	start := time.Now()
	err := d.r.Send(ctx, d.n)
	w.metrics.sendSeconds.Observe(time.Since(start).Seconds())
	if err == nil {
		return proceed
	}
	w.claims.release(d.key, d.claim)
	return w.sendFailed(ctx, d, err)
}

func (w *Worker) sendFailed(ctx context.Context, d *delivery, err error) verdict {
	spec := d.spec
	rec := crossing.Record{Outcome: crossing.Failed, SMTPCode: smtpCode(err), Error: err.Error()}
	w.out.outcome(d.x, spec.Name, rec)
	if isPermanent(err) {
		return w.deadLetter(ctx, d, rec)
	}
	attempt := 1
	var queued time.Time
	if meta, err := d.msg.Metadata(); err == nil {
		attempt, queued = int(meta.NumDelivered), meta.Timestamp
	}
	if !queued.IsZero() && time.Since(queued) > spec.GiveUpAfter { // the server's time, not the quiet hours' clock
		rec.Error = fmt.Sprintf("gave up after %s: %s", spec.GiveUpAfter, rec.Error)
		return w.deadLetter(ctx, d, rec)
	}
	wait := retry.Delay(attempt, time.Second, 5*time.Minute)
	if after, ok := retryAfter(err); ok {
		wait = max(after, 10*time.Millisecond)
	}
	if !queued.IsZero() {
		// Come back no later than the give-up time, to dead-letter then.
		wait = min(wait, max(spec.GiveUpAfter-time.Since(queued), 0)+100*time.Millisecond)
	}
	d.log.Warn("send failed; will retry", "smtp_code", rec.SMTPCode, "attempt", attempt, "retry_in", wait, "err", err)
	return later(wait)
}

// deadLetter keeps a delivery that failed for good in the dead-letter
// stream with the reason, marks it done in the ledger and records it.
func (w *Worker) deadLetter(ctx context.Context, d *delivery, rec crossing.Record) verdict {
	dl := nats.NewMsg(w.bus.DeadLetterSubject("jobs"))
	dl.Data = d.msg.Data()
	dl.Header.Set(bus.HeaderDeadReason, rec.Error)
	dl.Header.Set(bus.HeaderDeadSubject, d.msg.Subject())
	dl.Header.Set(bus.HeaderDeadReceiver, d.name)
	dl.Header.Set(nats.MsgIdHdr, "jobs."+d.key)
	if meta, err := d.msg.Metadata(); err == nil {
		dl.Header.Set(bus.HeaderDeadSeq, fmt.Sprint(meta.Sequence.Stream))
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := w.bus.JS.PublishMsg(pctx, dl); err != nil {
		d.log.Error("dead-letter publish failed; the delivery will be retried", "err", err)
		return later(time.Minute)
	}
	if err := w.claims.write(ctx, d.key, ledger.DeadLettered); err != nil {
		d.log.Warn("dead-lettered but the ledger write failed; it may be dead-lettered again", "err", err)
	}
	d.log.Error("delivery failed for good; dead-lettered", "smtp_code", rec.SMTPCode, "err", rec.Error)
	rec.Outcome = crossing.DeadLettered
	w.out.outcome(d.x, d.name, rec)
	return finished()
}
