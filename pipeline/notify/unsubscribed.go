package notify

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
)

// unsubscribed is the email step that leaves out the recipients who
// unsubscribed from x's rule and gives the rest their links. gone are
// those left out, for the caller to record once the delivery is done;
// when no one is left the delivery is done here (recorded, ledger
// written, not sent). ok false: stop here, with wait and done as deliver
// returns them.
func (w *Worker) unsubscribed(ctx context.Context, x crossing.Crossing, receiver string, n *Notification) (gone []string, wait time.Duration, done, ok bool) {
	kept, gone, err := w.unsubs.Filter(ctx, x.Rule, n.Recipients)
	if err != nil {
		w.logger.Warn("read unsubscribes failed; job will be redelivered", "key", x.Key, "receiver", receiver, "err", err)
		return nil, w.cfg.DeferDelay, false, false
	}
	if len(kept) == 0 && len(gone) > 0 {
		if err := w.writeLedger(ctx, LedgerKey(x.Key, receiver), stateUnsubscribed); err != nil {
			return nil, w.cfg.DeferDelay, false, false
		}
		w.recordUnsubscribed(x, receiver, gone)
		return nil, 0, true, false
	}
	n.Recipients = kept
	n.Links = w.signer.For(x, kept, w.now())
	return gone, 0, false, true
}

// recordUnsubscribed records the recipients an email delivery left out.
func (w *Worker) recordUnsubscribed(x crossing.Crossing, receiver string, gone []string) {
	if len(gone) > 0 {
		w.outcome(x, receiver, crossing.Record{Outcome: crossing.Unsubscribed, Error: "unsubscribed from rule " + x.Rule + ": " + strings.Join(gone, ", ")})
	}
}

// digestBySubscription splits a quiet-hours digest n of held by what each
// of its addresses is subscribed to: the addresses subscribed to every
// rule in it share n; one that left some of its rules gets a digest of
// the rest to itself; one that left them all gets none.
func (w *Worker) digestBySubscription(ctx context.Context, held []crossing.Crossing, n Notification) ([]Notification, error) {
	if len(n.Recipients) == 0 {
		return []Notification{n}, nil // the sink refuses it, as before
	}
	var full []string
	var out []Notification
	for _, r := range n.Recipients {
		gone := map[string]bool{}
		for _, x := range held {
			if _, seen := gone[x.Rule]; seen {
				continue
			}
			has, err := w.unsubs.Has(ctx, x.Rule, r)
			if err != nil {
				return nil, err
			}
			gone[x.Rule] = has
		}
		var keep []crossing.Crossing
		for _, x := range held {
			if !gone[x.Rule] {
				keep = append(keep, x)
			}
		}
		switch {
		case len(keep) == len(held):
			full = append(full, r)
		case len(keep) > 0:
			// A key of its own: its own Message-ID, and its own file
			// with the file transport.
			d := digestOf(keep, fmt.Sprintf("%s.%d", n.Key, len(out)+1))
			d.Recipients = []string{r}
			out = append(out, d)
		}
	}
	if len(full) > 0 {
		n.Recipients = full
		out = append([]Notification{n}, out...)
	}
	return out, nil
}
