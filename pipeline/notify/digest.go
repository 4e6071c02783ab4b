package notify

// Quiet hours' digests: crossings held for a receiver during its quiet
// hours (deliver.go's quiet step) wait in the held bucket. Once the quiet
// hours are over, one worker (under a lease per receiver) sends them as
// one digest, records it in the ledger under a key made of the held
// crossings' keys, and only then deletes them: a worker dying in between
// leaves them for the next, whose ledger check stops a second digest.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/broker/lock"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/pipeline/ledger"
	"github.com/pagewatch/pagewatch/pipeline/links"
)

// digests sends each receiver's held crossings once its quiet hours end.
type digests struct {
	specs   []ReceiverSpec
	held    jetstream.KeyValue // the crossings held, by receiver
	locks   jetstream.KeyValue // a lease per receiver: one worker sends its digest
	worker  string
	lockTTL time.Duration
	claims  *claims
	limits  *limits
	unsubs  *links.Unsubscribes
	out     *outcomes
	now     func() time.Time
	logger  *slog.Logger
}

// digestEvery is how often a worker looks for held crossings whose quiet
// hours are over.
const digestEvery = time.Second

// maxHeldDigest bounds one digest; more are sent in the next.
const maxHeldDigest = crossing.MaxDigestItems

// run sends digests until ctx ends.
func (g *digests) run(ctx context.Context) {
	t := time.NewTicker(digestEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, s := range g.specs {
			if s.Quiet.Enabled() && s.Quiet.Holds() && !s.Quiet.In(g.now()) {
				if err := g.send(ctx, s); err != nil && ctx.Err() == nil {
					g.logger.Warn("quiet-hours digest not sent; will retry", "receiver", s.Name, "err", err)
				}
			}
		}
	}
}

// send sends what is held for one receiver, if anything.
func (g *digests) send(ctx context.Context, spec ReceiverSpec) error {
	keys, err := g.held.ListKeysFiltered(ctx, spec.Name+".*")
	if err != nil {
		return fmt.Errorf("list held crossings: %w", err)
	}
	var names []string
	for k := range keys.Keys() {
		names = append(names, k)
	}
	if len(names) == 0 {
		return nil
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lease, err := lock.Acquire(lctx, g.locks, "digest."+spec.Name, g.worker, g.lockTTL, cancel)
	if errors.Is(err, lock.ErrLocked) {
		return nil // another worker is at it
	}
	if err != nil {
		return err
	}
	defer func() { _ = lease.Release(context.WithoutCancel(lctx)) }()

	var held []crossing.Crossing
	var heldKeys []string
	for _, k := range names[:min(len(names), maxHeldDigest)] {
		e, err := g.held.Get(lctx, k)
		if err != nil {
			continue // deleted meanwhile
		}
		x, err := crossing.Unmarshal(e.Value())
		if err != nil {
			_ = g.held.Delete(lctx, k)
			continue
		}
		held, heldKeys = append(held, x), append(heldKeys, k)
	}
	if len(held) == 0 {
		return nil
	}
	slices.SortFunc(held, func(a, b crossing.Crossing) int { return a.CrossedAt.Compare(b.CrossedAt) })
	ids := make([]string, len(held))
	for i, x := range held {
		ids[i] = x.Key
	}
	slices.Sort(ids)
	key := "quiet." + spec.Name + "." + bus.Key(ids...)
	if found, err := g.claims.ledger.Has(lctx, key); err == nil && found {
		return g.dropHeld(lctx, heldKeys) // sent before a crash
	}
	n := digestOf(held, key)
	if len(spec.To) > 0 {
		n.Recipients = spec.To
	}
	r, err := spec.Open()
	if err != nil {
		return err
	}
	if c, ok := r.(io.Closer); ok {
		defer c.Close()
	}
	x := crossing.Crossing{Key: key, Rule: n.Rule, Site: n.Site, Path: n.Path, CrossedAt: n.CrossedAt}
	sends := []Notification{n}
	if spec.Kind == KindEmail {
		// Each address gets only the rules it is subscribed to (links.go).
		if sends, err = g.bySubscription(lctx, held, n); err != nil {
			return err
		}
	}
	for _, n := range sends {
		if _, ok := g.limits.await(lctx, x, spec, n.Recipients); !ok {
			return errors.New("rate limit: later")
		}
		if err := r.Send(lctx, n); err != nil {
			g.out.outcome(x, spec.Name, crossing.Record{Outcome: crossing.Failed, SMTPCode: smtpCode(err), Error: err.Error()})
			if isPermanent(err) {
				g.logger.Error("quiet-hours digest refused for good; its crossings stay held", "receiver", spec.Name, "err", err)
			}
			return err
		}
	}
	state, rec := ledger.Sent, crossing.Record{Outcome: crossing.Sent}
	if len(sends) == 0 { // every address left every rule in it
		state, rec = ledger.Unsubscribed, crossing.Record{Outcome: crossing.Unsubscribed, Error: "every address unsubscribed from the digest's rules"}
	}
	if err := g.claims.write(lctx, key, state); err != nil {
		return err
	}
	g.out.outcome(x, spec.Name, rec)
	g.logger.Info("quiet-hours digest done", "receiver", spec.Name, "crossings", len(held), "outcome", rec.Outcome)
	return g.dropHeld(lctx, heldKeys)
}

func (g *digests) dropHeld(ctx context.Context, keys []string) error {
	for _, k := range keys {
		if err := g.held.Delete(ctx, k); err != nil {
			return fmt.Errorf("delete held %s: %w", k, err)
		}
	}
	return nil
}

// digestOf is the notification of held crossings, latest last.
func digestOf(held []crossing.Crossing, key string) Notification {
	first, last := held[0], held[len(held)-1]
	n := Notification{Key: key, Rule: first.Rule, Site: first.Site, Path: "(quiet hours)", Window: first.Window,
		CrossedAt: last.CrossedAt, DigestTotal: len(held),
		Subject: fmt.Sprintf("[pagewatch] %d crossings during quiet hours", len(held))}
	var body strings.Builder
	fmt.Fprintf(&body, "%d crossings came in during quiet hours, %s to %s UTC:", len(held),
		first.CrossedAt.UTC().Format("2006-01-02 15:04"), last.CrossedAt.UTC().Format("2006-01-02 15:04"))
	n.Body = body.String()
	for _, x := range held {
		if x.Rule != n.Rule {
			n.Rule = "(several)"
		}
		if x.Site != n.Site {
			n.Site = "(several)"
		}
		for _, r := range x.Recipients {
			if !slices.Contains(n.Recipients, r) {
				n.Recipients = append(n.Recipients, r)
			}
		}
		n.Digest = append(n.Digest, DigestItem{Path: x.Site + x.Path, Count: x.Count, Threshold: x.Threshold})
	}
	return n
}

// bySubscription splits a quiet-hours digest n of held by what each
// of its addresses is subscribed to: the addresses subscribed to every
// rule in it share n; one that left some of its rules gets a digest of
// the rest to itself; one that left them all gets none.
func (g *digests) bySubscription(ctx context.Context, held []crossing.Crossing, n Notification) ([]Notification, error) {
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
			has, err := g.unsubs.Has(ctx, x.Rule, r)
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
