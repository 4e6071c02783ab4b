package notify

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/broker/ratelimit"
	"github.com/pagewatch/pagewatch/broker/retry"
	"github.com/pagewatch/pagewatch/domain/crossing"
)

// stepLimit waits for the receiver's rate limits (limits.await), claimed
// last of the steps before the send so that a slot is used at once.
func (w *Worker) stepLimit(ctx context.Context, d *delivery) verdict {
	if wait, ok := w.limits.await(ctx, d.x, d.spec, d.n.Recipients); !ok {
		return later(wait)
	}
	return proceed
}

// await is the rate-limit wait of one delivery or digest. Email receivers
// use worker.rate_limit: every recipient must be under its own limit and
// the account under the global one; other receivers have a limit of
// their own. A slot that is far off sends the job back to wait its turn
// in JetStream (wait says how long), so no runner sleeps for long;
// nothing is dropped. ok reports whether to send now.
func (l *limits) await(ctx context.Context, x crossing.Crossing, spec ReceiverSpec, recipients []string) (wait time.Duration, ok bool) {
	// Waits longer than this go back to the queue: well inside ack_wait
	// and short enough that a runner holding a page lock keeps moving.
	maxWait := min(l.ackWait/4, 10*time.Second)
	if spec.Kind != KindEmail {
		slot, ok, err := l.limiter.TryReserve(ctx, receiverKey(spec.Name), spec.RateLimit, maxWait)
		if err != nil {
			l.logger.Warn("rate limit unavailable; job will be redelivered", "key", x.Key, "receiver", spec.Name, "err", err)
			return l.deferDelay, false
		}
		if !ok {
			l.throttled()
			l.out.outcome(x, spec.Name, crossing.Record{Outcome: crossing.RateLimited, Error: fmt.Sprintf("receiver over its limit; next slot in %s", slot.Wait.Round(time.Millisecond))})
			return slot.Wait, false
		}
		if slot.Wait > 0 {
			l.throttled()
		}
		if err := retry.Sleep(ctx, slot.Wait); err != nil {
			return 0, false
		}
		return 0, true
	}
	limits := l.email
	var longest time.Duration
	for _, rcpt := range recipients {
		slot, ok, err := l.limiter.TryReserve(ctx, ratelimit.Recipient(rcpt), limits.PerRecipient, maxWait)
		if err != nil {
			l.logger.Warn("rate limit unavailable; job will be redelivered", "key", x.Key, "err", err)
			return l.deferDelay, false
		}
		if !ok {
			// Slots claimed for other recipients of this mail are lost
			// capacity, never an extra send.
			l.throttled()
			l.out.outcome(x, spec.Name, crossing.Record{Outcome: crossing.RateLimited, Error: fmt.Sprintf("recipient over its limit; next slot in %s", slot.Wait.Round(time.Second))})
			return slot.Wait, false
		}
		longest = max(longest, slot.Wait)
	}
	if longest > 0 {
		l.throttled()
	}
	if err := retry.Sleep(ctx, longest); err != nil {
		return 0, false
	}
	// The global slot is claimed last: claiming it before a recipient's
	// wait would push every other worker's sends back too.
	start := time.Now()
	defer func() {
		if time.Since(start) > 5*time.Millisecond { // a wait, not the KV round trip
			l.throttled()
		}
	}()
	if err := l.limiter.Wait(ctx, ratelimit.Global(), limits.Global); err != nil {
		if ctx.Err() == nil {
			l.logger.Warn("global rate limit unavailable; job will be redelivered", "key", x.Key, "err", err)
		}
		return l.deferDelay, false
	}
	return 0, true
}

// Turn waits, blocking, for a send to the receiver under the shared
// rate limits crossings use: the receiver's own, or for email every
// recipient's and then the account's (email, worker.rate_limit). The
// worker's scheduled reports wait with it, so a report spends the same
// allowance as a crossing.
func Turn(ctx context.Context, lim *ratelimit.Limiter, spec ReceiverSpec, email ratelimit.Config, recipients []string) error {
	if spec.Kind != KindEmail {
		return lim.Wait(ctx, receiverKey(spec.Name), spec.RateLimit)
	}
	for _, rcpt := range recipients {
		if err := lim.Wait(ctx, ratelimit.Recipient(rcpt), email.PerRecipient); err != nil {
			return err
		}
	}
	return lim.Wait(ctx, ratelimit.Global(), email.Global)
}

func receiverKey(name string) ratelimit.Key {
	return ratelimit.Key{Name: "receiver", ID: bus.Key(name)}
}

// limits are the shared rate limits as this worker process waits for
// them, and when they last held a send back.
type limits struct {
	limiter    *ratelimit.Limiter
	email      ratelimit.Config // worker.rate_limit: email receivers
	ackWait    time.Duration
	deferDelay time.Duration
	out        *outcomes
	logger     *slog.Logger
	// throttledAt is when a rate limit last held a send back (unix ns):
	// the fetcher looks deep into the queue only while sends wait.
	throttledAt atomic.Int64
}

// throttled records that a rate limit held a send back.
func (l *limits) throttled() { l.throttledAt.Store(time.Now().UnixNano()) }

// throttledWithin reports whether a rate limit held a send back in d.
func (l *limits) throttledWithin(d time.Duration) bool {
	return time.Since(time.Unix(0, l.throttledAt.Load())) <= d
}
