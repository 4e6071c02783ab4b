package notify

import (
	"context"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/pipeline/ledger"
)

// stepLedger skips what the ledger says was done, here or by another
// worker; finishes recording a send whose ledger write failed here
// before; and decides whether a claim in the ledger is taken over (this
// process's own claim that sent nothing, or a dead worker's after
// claim_timeout) or waited for.
func (w *Worker) stepLedger(ctx context.Context, d *delivery) verdict {
	le, rev, found, err := w.claims.ledger.Get(ctx, d.key)
	if err != nil {
		d.log.Warn("read sent ledger failed; job will be redelivered", "err", err)
		return later(w.cfg.DeferDelay)
	}
	switch {
	case found && le.State != ledger.Sending:
		// Done, here or by another worker.
		w.claims.settled(d.key)
		if le.WasSent() {
			w.out.outcome(d.x, d.name, crossing.Record{Outcome: crossing.Duplicate})
		}
		return finished()
	case w.claims.isUnrecorded(d.key):
		// A send whose ledger write failed here before (its claim still
		// there, or gone too).
		return w.recordSentBefore(ctx, d)
	case !found:
		// Nothing in the ledger: claimed afresh (stepClaim).
		return proceed
	case w.claims.ownUnsent(d.key, le):
		// This process's claim, whose write it could not confirm and
		// after which it sent nothing.
		d.takeOver, d.whose = rev, "own"
		return proceed
	case w.now().Sub(le.At) < w.cfg.claimTimeout():
		// Another worker is sending it, or has and is still trying to
		// record it.
		return later(w.cfg.DeferDelay)
	default:
		// Its claimer died between the claim and the result, or has not
		// reached the ledger for claim_timeout: whether the mail went out
		// is unknown, and it is sent (the exception of docs/design.md),
		// once: the claim is taken over by a compare-and-set.
		d.takeOver, d.whose, d.claimer = rev, "expired", le
		return proceed
	}
}

// recordSentBefore writes the ledger of a delivery this process sent but
// could not record.
func (w *Worker) recordSentBefore(ctx context.Context, d *delivery) verdict {
	if err := w.claims.write(ctx, d.key, ledger.Sent); err != nil {
		d.log.Error("sent before, and the sent ledger write failed again", "err", err)
		return later(w.cfg.DeferDelay)
	}
	w.claims.unrecorded.Delete(d.key)
	w.out.outcome(d.x, d.name, crossing.Record{Outcome: crossing.Sent})
	d.log.Info("notification sent before; recorded now")
	return finished()
}
