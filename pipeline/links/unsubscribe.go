package links

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
)

// Unsubscribe is one stored unsubscribe.
type Unsubscribe struct {
	Rule      string    `json:"rule"`
	Recipient string    `json:"recipient"`
	At        time.Time `json:"at"`
}

// Unsubscribes is the unsubscribe store. NewUnsubscribes does no I/O:
// the bucket is opened (created if need be) on first use.
type Unsubscribes struct{ bucket *bus.LazyKV }

// NewUnsubscribes returns the store of the unsubscribes in b's bucket.
func NewUnsubscribes(b *bus.Bus) *Unsubscribes {
	return &Unsubscribes{bucket: b.Lazy(bus.BucketUnsubscribes, 0)}
}

// OpenUnsubscribes returns a store whose bucket is open: for commands
// that want a NATS problem reported at once.
func OpenUnsubscribes(ctx context.Context, b *bus.Bus) (*Unsubscribes, error) {
	u := NewUnsubscribes(b)
	if _, err := u.kv(ctx); err != nil {
		return nil, err
	}
	return u, nil
}

func (u *Unsubscribes) kv(ctx context.Context) (jetstream.KeyValue, error) { return u.bucket.Get(ctx) }

func unsubKey(rule, recipient string) string {
	return bus.Key(rule, strings.ToLower(strings.TrimSpace(recipient)))
}

// Add records that recipient wants nothing more from rule. Doing it twice
// keeps the first.
func (u *Unsubscribes) Add(ctx context.Context, rule, recipient string, now time.Time) error {
	kv, err := u.kv(ctx)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(Unsubscribe{Rule: rule, Recipient: recipient, At: now.UTC()})
	_, err = kv.Create(ctx, unsubKey(rule, recipient), body)
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("store unsubscribe: %w", err)
	}
	return nil
}

// Remove undoes an unsubscribe (an operator's resubscribe).
func (u *Unsubscribes) Remove(ctx context.Context, rule, recipient string) error {
	kv, err := u.kv(ctx)
	if err != nil {
		return err
	}
	if err := kv.Delete(ctx, unsubKey(rule, recipient)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("delete unsubscribe: %w", err)
	}
	return nil
}

// Has reports whether recipient unsubscribed from rule.
func (u *Unsubscribes) Has(ctx context.Context, rule, recipient string) (bool, error) {
	kv, err := u.kv(ctx)
	if err != nil {
		return false, err
	}
	_, err = kv.Get(ctx, unsubKey(rule, recipient))
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

// List returns every stored unsubscribe, by rule and address.
func (u *Unsubscribes) List(ctx context.Context) ([]Unsubscribe, error) {
	kv, err := u.kv(ctx)
	if err != nil {
		return nil, err
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("list unsubscribes: %w", err)
	}
	var out []Unsubscribe
	for k := range keys.Keys() {
		e, err := kv.Get(ctx, k)
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
