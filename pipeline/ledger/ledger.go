// Package ledger is the sent ledger: one entry per (crossing, receiver)
// saying what was done for it, so that a job delivered twice, or taken
// over from a dead worker, is sent once. It owns the ledger's bucket and
// its format; the worker and the console read and write entries only
// through Ledger.
//
// An entry is written three ways, each ordered by the bucket's leader: a
// claim (Create, or Update at the revision of a dead worker's claim) just
// before a send, so that of two workers one sends; the result (Put) after
// it; and a release (Release) of a claim whose send failed.
package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
)

// State is what an entry says was done.
type State string

// States of an entry.
const (
	// Legacy is the state of entries of versions before receivers: sent.
	Legacy       State = ""
	Sent         State = "sent"
	DeadLettered State = "dead_lettered"
	// Sending is a worker's claim on a delivery, made by a
	// compare-and-set just before it sends and replaced by the result.
	Sending State = "sending"
	Held    State = "held"
	Quiet   State = "quiet"
	// Unsubscribed: every recipient had unsubscribed from the rule.
	Unsubscribed State = "unsubscribed"
)

// Entry is one ledger entry, as stored.
type Entry struct {
	At        time.Time `json:"at"`
	Worker    string    `json:"worker"`
	MessageID string    `json:"message_id,omitempty"`
	State     State     `json:"state,omitempty"`
}

// WasSent reports whether the entry records a send.
func (e Entry) WasSent() bool { return e.State == Legacy || e.State == Sent }

// BareReceiver is the receiver whose entries keep the bare crossing key
// of versions before receivers existed (the default email receiver), so
// an upgrade sends nothing twice.
const BareReceiver = "email"

// Key is the ledger key of (crossing, receiver).
func Key(crossingKey, receiver string) string {
	if receiver == BareReceiver {
		return crossingKey
	}
	return crossingKey + ".to." + receiver
}

// Ledger reads and writes the entries. New does no I/O: the bucket is
// opened (created if need be) on first use.
type Ledger struct {
	b      *bus.Bus
	bucket *bus.LazyKV
}

// New returns the ledger kept in b's bucket.
func New(b *bus.Bus) *Ledger { return &Ledger{b: b, bucket: b.Lazy(bus.BucketSent, 0)} }

func (l *Ledger) kv(ctx context.Context) (jetstream.KeyValue, error) { return l.bucket.Get(ctx) }

// Open opens the bucket now: a worker does at start, to be ready.
func (l *Ledger) Open(ctx context.Context) error {
	_, err := l.kv(ctx)
	return err
}

// Get reads an entry as the bucket's leader has it: a replica behind
// would say "not sent" of what was sent (bus.LeaderGet). rev is the
// entry's revision, for a takeover. An unreadable entry is found with
// the zero Entry (a claim of long ago, by its time).
func (l *Ledger) Get(ctx context.Context, key string) (e Entry, rev uint64, found bool, err error) {
	v, rev, found, err := l.b.LeaderGet(ctx, bus.BucketSent, key)
	if err != nil || !found {
		return Entry{}, 0, false, err
	}
	_ = json.Unmarshal(v, &e)
	return e, rev, true, nil
}

// Has reports whether key has an entry, as the leader has it.
func (l *Ledger) Has(ctx context.Context, key string) (bool, error) {
	_, _, found, err := l.b.LeaderGet(ctx, bus.BucketSent, key)
	return found, err
}

// Claim writes a claim: a create, or, with takeOver, an update of the
// claim at that revision. It fails with jetstream.ErrKeyExists or
// ErrKeyRevisionMismatch if another worker wrote the key first.
func (l *Ledger) Claim(ctx context.Context, key string, e Entry, takeOver uint64) (uint64, error) {
	kv, err := l.kv(ctx)
	if err != nil {
		return 0, err
	}
	body, _ := json.Marshal(e)
	if takeOver != 0 {
		return kv.Update(ctx, key, body, takeOver)
	}
	return kv.Create(ctx, key, body)
}

// Put writes an entry, whatever was there.
func (l *Ledger) Put(ctx context.Context, key string, e Entry) error {
	if key == "" {
		return errors.New("empty ledger key")
	}
	kv, err := l.kv(ctx)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(e)
	_, err = kv.Put(ctx, key, body)
	return err
}

// Release deletes a claim at its revision.
func (l *Ledger) Release(ctx context.Context, key string, rev uint64) error {
	kv, err := l.kv(ctx)
	if err != nil {
		return err
	}
	return kv.Delete(ctx, key, jetstream.LastRevision(rev))
}

// Forget deletes the entry of (crossing, receiver), so that the delivery
// is made again: the console does when an operator retries a dead
// letter. A ledger or entry that does not exist is no error, and Forget
// does not create the bucket.
func (l *Ledger) Forget(ctx context.Context, crossingKey, receiver string) error {
	kv, err := l.b.JS.KeyValue(ctx, l.b.BucketName(bus.BucketSent))
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open the sent ledger: %w", err)
	}
	if err := kv.Delete(ctx, Key(crossingKey, receiver)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("clear the sent ledger of %s: %w", crossingKey, err)
	}
	return nil
}
