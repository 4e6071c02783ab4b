package notify

// Unsubscribes: a recipient who used an email's unsubscribe link gets
// nothing more from that rule. Each is one key in NATS KV, (rule,
// recipient) hashed; the worker reads them before each email delivery.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/crossing"
)

// Unsubscribe is one stored unsubscribe.
type Unsubscribe struct {
	Rule      string    `json:"rule"`
	Recipient string    `json:"recipient"`
	At        time.Time `json:"at"`
}

// Unsubscribes is the unsubscribe store.
type Unsubscribes struct{ kv jetstream.KeyValue }

// OpenUnsubscribes opens (creating if need be) the unsubscribes bucket.
func OpenUnsubscribes(ctx context.Context, b *bus.Bus) (*Unsubscribes, error) {
	kv, err := b.KV(ctx, bus.BucketUnsubscribes, 0)
	if err != nil {
		return nil, err
	}
	return &Unsubscribes{kv: kv}, nil
}

func unsubKey(rule, recipient string) string {
	return bus.Key(rule, strings.ToLower(strings.TrimSpace(recipient)))
}

// Add records that recipient wants nothing more from rule. Doing it twice
// keeps the first.
func (u *Unsubscribes) Add(ctx context.Context, rule, recipient string, now time.Time) error {
	body, _ := json.Marshal(Unsubscribe{Rule: rule, Recipient: recipient, At: now.UTC()})
	_, err := u.kv.Create(ctx, unsubKey(rule, recipient), body)
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("store unsubscribe: %w", err)
	}
	return nil
}

// Remove undoes an unsubscribe (an operator's resubscribe).
func (u *Unsubscribes) Remove(ctx context.Context, rule, recipient string) error {
	if err := u.kv.Delete(ctx, unsubKey(rule, recipient)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("delete unsubscribe: %w", err)
	}
	return nil
}

// Has reports whether recipient unsubscribed from rule.
func (u *Unsubscribes) Has(ctx context.Context, rule, recipient string) (bool, error) {
	_, err := u.kv.Get(ctx, unsubKey(rule, recipient))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return false, nil
	}
	return false, fmt.Errorf("read unsubscribe: %w", err)
}

// Filter splits recipients into those still subscribed to rule and those
// who unsubscribed.
func (u *Unsubscribes) Filter(ctx context.Context, rule string, recipients []string) (kept, gone []string, err error) {
	for _, r := range recipients {
		has, err := u.Has(ctx, rule, r)
		if err != nil {
			return nil, nil, err
		}
		if has {
			gone = append(gone, r)
		} else {
			kept = append(kept, r)
		}
	}
	return kept, gone, nil
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

// List returns every stored unsubscribe, by rule and address.
func (u *Unsubscribes) List(ctx context.Context) ([]Unsubscribe, error) {
	keys, err := u.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("list unsubscribes: %w", err)
	}
	var out []Unsubscribe
	for k := range keys.Keys() {
		e, err := u.kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read unsubscribe %s: %w", k, err)
		}
		var un Unsubscribe
		if json.Unmarshal(e.Value(), &un) == nil {
			out = append(out, un)
		}
	}
	slices.SortFunc(out, func(a, b Unsubscribe) int {
		return cmp.Or(cmp.Compare(a.Rule, b.Rule), cmp.Compare(strings.ToLower(a.Recipient), strings.ToLower(b.Recipient)))
	})
	return out, nil
}
