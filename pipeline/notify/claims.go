package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/retry"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/pipeline/ledger"
)

// claims is this worker process's side of the sent ledger: the claims and
// results it writes, and what it remembers of writes it could not
// confirm, so that no failure of the ledger sends anything twice.
type claims struct {
	ledger  *ledger.Ledger
	worker  string // this process's name in the entries
	ackWait time.Duration
	now     func() time.Time
	logger  *slog.Logger
	// drainOver is cancelled when a shutdown's drain_timeout has passed:
	// ledger writes still being retried give up then.
	drainOver context.Context
	// unrecorded holds the ledger keys this process sent but could not
	// record in the ledger: when the job comes back here, the ledger is
	// written instead of sending again.
	unrecorded sync.Map
	// unsent holds the claims whose write this process could not confirm
	// (a timeout, a leader change), by key, with the claim's time: found
	// in the ledger later, such a claim is known to have sent nothing and
	// is taken over at once, not after claim_timeout.
	unsent sync.Map
}

// isUnrecorded reports whether key was sent here but not recorded.
func (c *claims) isUnrecorded(key string) bool {
	_, ok := c.unrecorded.Load(key)
	return ok
}

func (c *claims) markUnrecorded(key string) { c.unrecorded.Store(key, struct{}{}) }

// settled forgets what was remembered of key: the ledger has its result.
func (c *claims) settled(key string) {
	c.unsent.Delete(key)
	c.unrecorded.Delete(key)
}

// heldClaim is a claim this worker wrote: its revision, its time as
// written (at) and as this process's monotonic clock read it (began).
type heldClaim struct {
	rev   uint64
	at    time.Time
	began time.Time
}

// claim writes this worker's claim on a delivery: a create, or an update
// of a dead worker's claim at its revision. It fails if another worker
// wrote the key first. A write whose result is unknown (a timeout, a
// leader change) is remembered, so that finding it later this worker
// knows nothing was sent under it.
func (c *claims) claim(ctx context.Context, key string, takeOver uint64) (heldClaim, error) {
	began := time.Now()
	at := c.now().UTC()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rev, err := c.ledger.Claim(ctx, key, ledger.Entry{At: at, Worker: c.worker, MessageID: crossing.MessageID(key), State: ledger.Sending}, takeOver)
	switch {
	case err == nil:
		c.unsent.Delete(key)
	case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		// Another worker's write came first (R1 and R3 streams say so
		// with different codes). An earlier claim of ours that is
		// unconfirmed stays remembered: it may be the one in the way.
	default:
		c.rememberUnsent(key, at)
	}
	return heldClaim{rev: rev, at: at, began: began}, err
}

// ownUnsent reports whether le is a claim of this process that it
// could not confirm, and so sent nothing under.
func (c *claims) ownUnsent(key string, le ledger.Entry) bool {
	v, ok := c.unsent.Load(key)
	return ok && le.Worker == c.worker && slices.ContainsFunc(v.([]time.Time), le.At.Equal)
}

// rememberUnsent adds a claim to the key's claims this process sent
// nothing under. The page's lock keeps one runner on a key at a time.
func (c *claims) rememberUnsent(key string, at time.Time) {
	var ats []time.Time
	if v, ok := c.unsent.Load(key); ok {
		ats = v.([]time.Time)
	}
	c.unsent.Store(key, append(slices.Clone(ats), at))
}

// margin is kept between the claimer's last ledger write and the
// time another worker may take its claim over: for the clocks of two
// machines, and a write in flight.
func (c *claims) margin() time.Duration {
	return min(c.ackWait/4, 15*time.Second)
}

// release deletes a claim whose send failed, so that the retry can
// claim again at once. If it cannot, this worker still knows nothing was
// sent under the claim and takes it over when the job comes back here;
// another worker waits for claim_timeout.
func (c *claims) release(key string, held heldClaim) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.ledger.Release(ctx, key, held.rev); err != nil {
		c.rememberUnsent(key, held.at)
		c.logger.Warn("cannot release the claim of a failed send; this worker takes it over on the retry, another waits for claim_timeout", "key", key, "err", err)
	}
}

func (c *claims) write(ctx context.Context, key string, state ledger.State) error {
	return c.writeFor(ctx, key, state, c.ackWait)
}

// writeFor writes a ledger entry, trying for up to budget.
func (c *claims) writeFor(ctx context.Context, key string, state ledger.State, budget time.Duration) error {
	e := ledger.Entry{At: c.now().UTC(), Worker: c.worker, MessageID: crossing.MessageID(key), State: state}
	// The delivery is done: the write must not be cut short by a lost
	// lease or a shutdown, or it would be done again. It is tried for
	// the budget (at least ack_wait, a minute by default: long enough
	// for a leader election), each try for 5 s: a request to a frozen
	// or lost bucket leader would otherwise wait out the whole budget.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer cancel()
	// Past drain_timeout at shutdown the process is leaving: it stops
	// trying, and the send stays unrecorded (logged by the caller).
	stop := context.AfterFunc(c.drainOver, cancel)
	defer stop()
	var err error
	for attempt := 0; ctx.Err() == nil; attempt++ {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		err = c.ledger.Put(actx, key, e)
		acancel()
		if err == nil {
			return nil
		}
		_ = retry.Sleep(ctx, retry.Delay(attempt, 100*time.Millisecond, 5*time.Second))
	}
	return fmt.Errorf("write sent ledger %s: %w", key, err)
}
