package notify

import (
	"context"
	"strings"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/pipeline/ledger"
)

// stepUnsubscribed leaves out, of an email delivery, the recipients who
// unsubscribed from the crossing's rule, and gives the rest their links.
// Those left out are recorded once the delivery is done; when no one is
// left the delivery is done here (recorded, ledger written, not sent).
func (w *Worker) stepUnsubscribed(ctx context.Context, d *delivery) verdict {
	if d.spec.Kind != KindEmail {
		return proceed
	}
	kept, gone, err := w.unsubs.Filter(ctx, d.x.Rule, d.n.Recipients)
	if err != nil {
		d.log.Warn("read unsubscribes failed; job will be redelivered", "err", err)
		return later(w.cfg.DeferDelay)
	}
	if len(kept) == 0 && len(gone) > 0 {
		if err := w.claims.write(ctx, d.key, ledger.Unsubscribed); err != nil {
			return later(w.cfg.DeferDelay)
		}
		w.recordUnsubscribed(d.x, d.name, gone)
		return finished()
	}
	d.n.Recipients, d.gone = kept, gone
	d.n.Links = w.signer.For(d.x, kept, w.now())
	return proceed
}

// recordUnsubscribed records the recipients an email delivery left out.
func (w *Worker) recordUnsubscribed(x crossing.Crossing, receiver string, gone []string) {
	if len(gone) > 0 {
		w.out.outcome(x, receiver, crossing.Record{Outcome: crossing.Unsubscribed, Error: "unsubscribed from rule " + x.Rule + ": " + strings.Join(gone, ", ")})
	}
}
