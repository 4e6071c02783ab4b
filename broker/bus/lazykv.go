package bus

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// LazyKV is a bucket opened (created if need be) on first use, so that
// the store holding it is built without I/O. A failed open is tried again
// on the next use.
type LazyKV struct {
	b    *Bus
	name string
	ttl  time.Duration

	mu sync.Mutex
	kv jetstream.KeyValue // nil until opened
}

// Lazy returns the bucket KV would open for name and ttl, opened on first use.
func (b *Bus) Lazy(name string, ttl time.Duration) *LazyKV {
	return &LazyKV{b: b, name: name, ttl: ttl}
}

// Get opens the bucket once and returns it.
func (l *LazyKV) Get(ctx context.Context) (jetstream.KeyValue, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kv != nil {
		return l.kv, nil
	}
	kv, err := l.b.KV(ctx, l.name, l.ttl)
	if err != nil {
		return nil, err
	}
	l.kv = kv
	return kv, nil
}
