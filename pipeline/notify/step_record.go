package notify

import (
	"context"
	"fmt"
	"time"

	"github.com/pagewatch/pagewatch/broker/retry"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/pipeline/ledger"
)

// stepRecord records the delivery as sent, under the lock, before the
// ack; for as long as the claim keeps other workers off it, so that a
// ledger outage shorter than claim_timeout sends nothing twice.
func (w *Worker) stepRecord(ctx context.Context, d *delivery) verdict {
	budget := time.Until(d.claim.began.Add(w.cfg.claimTimeout() - w.claimMargin()))
	if err := w.writeLedgerFor(ctx, d.key, ledger.Sent, max(budget, time.Second)); err != nil {
		// It went out. Keep the job unacknowledged: when it comes back to
		// this process the ledger is written, not the mail sent again.
		// Only if it goes to another worker first is it sent twice; a
		// mail's Message-ID makes that repeat recognisable.
		w.unrecorded.Store(d.key, struct{}{})
		d.log.Error("sent but the sent ledger write failed", "err", err)
		return later(w.cfg.DeferDelay)
	}
	w.outcome(d.x, d.name, crossing.Record{Outcome: crossing.Sent})
	w.recordUnsubscribed(d.x, d.name, d.gone)
	d.log.Info("notification sent", "rule", d.x.Rule, "recipients", len(d.n.Recipients))
	return finished()
}

func (w *Worker) writeLedger(ctx context.Context, key string, state ledger.State) error {
	return w.writeLedgerFor(ctx, key, state, w.cfg.AckWait)
}

// writeLedgerFor writes a ledger entry, trying for up to budget.
func (w *Worker) writeLedgerFor(ctx context.Context, key string, state ledger.State, budget time.Duration) error {
	e := ledger.Entry{At: w.now().UTC(), Worker: w.cfg.Name, MessageID: crossing.MessageID(key), State: state}
	// The delivery is done: the write must not be cut short by a lost
	// lease or a shutdown, or it would be done again. It is tried for
	// the budget (at least ack_wait, a minute by default: long enough
	// for a leader election), each try for 5 s: a request to a frozen
	// or lost bucket leader would otherwise wait out the whole budget.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer cancel()
	// Past drain_timeout at shutdown the process is leaving: it stops
	// trying, and the send stays unrecorded (logged by the caller).
	stop := context.AfterFunc(w.drainOver, cancel)
	defer stop()
	var err error
	for attempt := 0; ctx.Err() == nil; attempt++ {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		err = w.ledger.Put(actx, key, e)
		acancel()
		if err == nil {
			return nil
		}
		_ = retry.Sleep(ctx, retry.Delay(attempt, 100*time.Millisecond, 5*time.Second))
	}
	return fmt.Errorf("write sent ledger %s: %w", key, err)
}
