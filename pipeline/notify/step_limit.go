package notify

import (
	"context"
	"fmt"
	"time"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/broker/ratelimit"
	"github.com/pagewatch/pagewatch/broker/retry"
	"github.com/pagewatch/pagewatch/domain/crossing"
)

// stepLimit waits for the receiver's rate limits (awaitSlot), claimed
// last of the steps before the send so that a slot is used at once.
func (w *Worker) stepLimit(ctx context.Context, d *delivery) verdict {
	if wait, ok := w.awaitSlot(ctx, d.x, d.spec, d.n.Recipients); !ok {
		return later(wait)
	}
	return proceed
}

// awaitSlot is the rate-limit wait of one delivery or digest. Email receivers
// use worker.rate_limit: every recipient must be under its own limit and
// the account under the global one; other receivers have a limit of
// their own. A slot that is far off sends the job back to wait its turn
// in JetStream (wait says how long), so no runner sleeps for long;
// nothing is dropped. ok reports whether to send now.
func (w *Worker) awaitSlot(ctx context.Context, x crossing.Crossing, spec ReceiverSpec, recipients []string) (wait time.Duration, ok bool) {
	// Waits longer than this go back to the queue: well inside ack_wait
	// and short enough that a runner holding a page lock keeps moving.
	maxWait := min(w.cfg.AckWait/4, 10*time.Second)
	if spec.Kind != KindEmail {
		slot, ok, err := w.limiter.TryReserve(ctx, ratelimit.Key{Name: "receiver", ID: bus.Key(spec.Name)}, spec.RateLimit, maxWait)
		if err != nil {
			w.logger.Warn("rate limit unavailable; job will be redelivered", "key", x.Key, "receiver", spec.Name, "err", err)
			return w.cfg.DeferDelay, false
		}
		if !ok {
			w.throttled()
			w.outcome(x, spec.Name, crossing.Record{Outcome: crossing.RateLimited, Error: fmt.Sprintf("receiver over its limit; next slot in %s", slot.Wait.Round(time.Millisecond))})
			return slot.Wait, false
		}
		if slot.Wait > 0 {
			w.throttled()
		}
		if err := retry.Sleep(ctx, slot.Wait); err != nil {
			return 0, false
		}
		return 0, true
	}
	limits := w.cfg.RateLimit
	var longest time.Duration
	for _, rcpt := range recipients {
		slot, ok, err := w.limiter.TryReserve(ctx, ratelimit.Recipient(rcpt), limits.PerRecipient, maxWait)
		if err != nil {
			w.logger.Warn("rate limit unavailable; job will be redelivered", "key", x.Key, "err", err)
			return w.cfg.DeferDelay, false
		}
		if !ok {
			// Slots claimed for other recipients of this mail are lost
			// capacity, never an extra send.
			w.throttled()
			w.outcome(x, spec.Name, crossing.Record{Outcome: crossing.RateLimited, Error: fmt.Sprintf("recipient over its limit; next slot in %s", slot.Wait.Round(time.Second))})
			return slot.Wait, false
		}
		longest = max(longest, slot.Wait)
	}
	if longest > 0 {
		w.throttled()
	}
	if err := retry.Sleep(ctx, longest); err != nil {
		return 0, false
	}
	// The global slot is claimed last: claiming it before a recipient's
	// wait would push every other worker's sends back too.
	start := time.Now()
	defer func() {
		if time.Since(start) > 5*time.Millisecond { // a wait, not the KV round trip
			w.throttled()
		}
	}()
	if err := w.limiter.Wait(ctx, ratelimit.Global(), limits.Global); err != nil {
		if ctx.Err() == nil {
			w.logger.Warn("global rate limit unavailable; job will be redelivered", "key", x.Key, "err", err)
		}
		return w.cfg.DeferDelay, false
	}
	return 0, true
}
