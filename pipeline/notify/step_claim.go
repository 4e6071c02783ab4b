package notify

import (
	"context"
)

// stepClaim claims the delivery by a compare-and-set that the bucket's
// leader orders: of two workers that both found nothing in the ledger
// (one read an answer that was behind, or a job went to both), one sends.
func (w *Worker) stepClaim(ctx context.Context, d *delivery) verdict {
	claim, err := w.claims.claim(ctx, d.key, d.takeOver)
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
