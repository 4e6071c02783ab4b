package console

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
)

// Revocations remember the sessions that logged out, until they would
// have expired anyway, for every console that shares the session key.
type Revocations interface {
	// Revoke records that a session ended before its expiry.
	Revoke(ctx context.Context, id string, expires time.Time) error
	// Revoked reports whether a session was revoked.
	Revoked(ctx context.Context, id string) (bool, error)
}

// revocationsBucket is the console's own bucket (nats.prefix +
// "_console_logouts"): one key per logged-out session id.
const revocationsBucket = "console_logouts"

// natsRevocations keeps the revocations in NATS KV, where every console
// replica reads them. The bucket's TTL is the session's lifetime: an
// entry outlives the session it revokes, and then lapses, so the bucket
// holds at most the logouts of one session_ttl.
type natsRevocations struct {
	b      *bus.Bus
	maxAge time.Duration
	mu     sync.Mutex
	kv     jetstream.KeyValue // nil until opened
}

// NewRevocations keeps revocations in b's bucket, each for maxAge
// (console.session_ttl). The bucket is made or opened on first use, and a
// failed open is tried again on the next.
func NewRevocations(b *bus.Bus, maxAge time.Duration) Revocations {
	return &natsRevocations{b: b, maxAge: maxAge}
}

func (n *natsRevocations) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.kv != nil {
		return n.kv, nil
	}
	kv, err := n.b.KV(ctx, revocationsBucket, n.maxAge)
	if err != nil {
		return nil, err
	}
	n.kv = kv
	return kv, nil
}

func (n *natsRevocations) Revoke(ctx context.Context, id string, expires time.Time) error {
	kv, err := n.bucket(ctx)
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, id, []byte(expires.UTC().Format(time.RFC3339))); err != nil {
		return fmt.Errorf("record logout: %w", err)
	}
	return nil
}

func (n *natsRevocations) Revoked(ctx context.Context, id string) (bool, error) {
	kv, err := n.bucket(ctx)
	if err != nil {
		return false, err
	}
	_, err = kv.Get(ctx, id)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read logouts: %w", err)
	}
	return true, nil
}
