package notify

import (
	"context"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/pipeline/ledger"
)

// stepQuiet is the quiet-hours step: during the receiver's quiet hours
// the crossing is held for the digest sent when they end (digest.go), or
// only recorded; either way the ledger marks the delivery done.
func (w *Worker) stepQuiet(ctx context.Context, d *delivery) verdict {
	if !d.spec.Quiet.Enabled() || !d.spec.Quiet.In(w.now()) {
		return proceed
	}
	outcome, state := crossing.Quiet, ledger.Quiet
	if d.spec.Quiet.Holds() {
		outcome, state = crossing.Held, ledger.Held
		body, err := d.x.Marshal()
		if err == nil {
			_, err = w.held.Put(ctx, heldKey(d.spec.Name, d.x.Key), body)
		}
		if err != nil {
			d.log.Warn("holding a crossing for the digest failed; job will be redelivered", "err", err)
			return later(w.cfg.DeferDelay)
		}
	}
	if err := w.claims.write(ctx, d.key, state); err != nil {
		return later(w.cfg.DeferDelay)
	}
	w.out.outcome(d.x, d.spec.Name, crossing.Record{Outcome: outcome})
	return finished()
}

// heldKey is a held crossing's key: receiver, then the hashed crossing key.
func heldKey(receiver, crossingKey string) string { return receiver + "." + bus.Key(crossingKey) }
