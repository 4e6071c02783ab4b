package notify

import (
	"context"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/pipeline/ledger"
)

// stepRecord records the delivery as sent, under the lock, before the
// ack; for as long as the claim keeps other workers off it, so that a
// ledger outage shorter than claim_timeout sends nothing twice.
func (w *Worker) stepRecord(ctx context.Context, d *delivery) verdict {
	budget := time.Until(d.claim.began.Add(w.cfg.claimTimeout() - w.claims.margin()))
	if err := w.claims.writeFor(ctx, d.key, ledger.Sent, max(budget, time.Second)); err != nil {
		// It went out. Keep the job unacknowledged: when it comes back to
		// this process the ledger is written, not the mail sent again.
		// Only if it goes to another worker first is it sent twice; a
		// mail's Message-ID makes that repeat recognisable.
		w.claims.markUnrecorded(d.key)
		d.log.Error("sent but the sent ledger write failed", "err", err)
		return later(w.cfg.DeferDelay)
	}
	w.out.outcome(d.x, d.name, crossing.Record{Outcome: crossing.Sent})
	w.recordUnsubscribed(d.x, d.name, d.gone)
	d.log.Info("notification sent", "rule", d.x.Rule, "recipients", len(d.n.Recipients))
	return finished()
}
