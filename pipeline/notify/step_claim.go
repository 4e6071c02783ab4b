package notify

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/pipeline/ledger"
)

// stepClaim claims the delivery by a compare-and-set that the bucket's
// leader orders: of two workers that both found nothing in the ledger
// (one read an answer that was behind, or a job went to both), one sends.
func (w *Worker) stepClaim(ctx context.Context, d *delivery) verdict {
	claim, err := w.claim(ctx, d.key, d.takeOver)
	if err != nil {
		d.log.Warn("delivery claimed by another worker, or the claim failed; job will be redelivered", "err", err)
		return later(w.cfg.DeferDelay)
	}
	d.claim = claim
	if d.takeOver != 0 {
		w.metrics.takeovers.WithLabelValues(d.whose).Inc()
		if d.whose == "expired" {
			d.log.Warn("took over a claim older than claim_timeout: its worker died or was cut off from NATS, and may have sent", "claimed_by", d.claimer.Worker, "claimed_at", d.claimer.At)
		}
	}
	return proceed
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
func (w *Worker) claim(ctx context.Context, key string, takeOver uint64) (heldClaim, error) {
	began := time.Now()
	at := w.now().UTC()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rev, err := w.ledger.Claim(ctx, key, ledger.Entry{At: at, Worker: w.cfg.Name, MessageID: crossing.MessageID(key), State: ledger.Sending}, takeOver)
	switch {
	case err == nil:
		w.unsentClaims.Delete(key)
	case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		// Another worker's write came first (R1 and R3 streams say so
		// with different codes). An earlier claim of ours that is
		// unconfirmed stays remembered: it may be the one in the way.
	default:
		w.rememberUnsent(key, at)
	}
	return heldClaim{rev: rev, at: at, began: began}, err
}

// ownUnsentClaim reports whether le is a claim of this process that it
// could not confirm, and so sent nothing under.
func (w *Worker) ownUnsentClaim(key string, le ledger.Entry) bool {
	v, ok := w.unsentClaims.Load(key)
	return ok && le.Worker == w.cfg.Name && slices.ContainsFunc(v.([]time.Time), le.At.Equal)
}

// rememberUnsent adds a claim to the key's claims this process sent
// nothing under. The page's lock keeps one runner on a key at a time.
func (w *Worker) rememberUnsent(key string, at time.Time) {
	var ats []time.Time
	if v, ok := w.unsentClaims.Load(key); ok {
		ats = v.([]time.Time)
	}
	w.unsentClaims.Store(key, append(slices.Clone(ats), at))
}

// claimMargin is kept between the claimer's last ledger write and the
// time another worker may take its claim over: for the clocks of two
// machines, and a write in flight.
func (w *Worker) claimMargin() time.Duration {
	return min(w.cfg.AckWait/4, 15*time.Second)
}

// releaseClaim deletes a claim whose send failed, so that the retry can
// claim again at once. If it cannot, this worker still knows nothing was
// sent under the claim and takes it over when the job comes back here;
// another worker waits for claim_timeout.
func (w *Worker) releaseClaim(key string, c heldClaim) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.ledger.Release(ctx, key, c.rev); err != nil {
		w.rememberUnsent(key, c.at)
		w.logger.Warn("cannot release the claim of a failed send; this worker takes it over on the retry, another waits for claim_timeout", "key", key, "err", err)
	}
}
