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

// Entries is the bucket as the key-value operations a rate limiter uses
// (ratelimit.KV), each opening the bucket first if need be: a limiter is
// built without I/O and shared by the parts of a process.
func (l *LazyKV) Entries() LazyEntries { return LazyEntries{l} }

// LazyEntries is a LazyKV's Get, Create and Update by key.
type LazyEntries struct{ l *LazyKV }

// Get reads a key.
func (e LazyEntries) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	kv, err := e.l.Get(ctx)
	if err != nil {
		return nil, err
	}
	return kv.Get(ctx, key)
}

// Create writes a key that must not exist.
func (e LazyEntries) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	kv, err := e.l.Get(ctx)
	if err != nil {
		return 0, err
	}
	return kv.Create(ctx, key, value, opts...)
}

// Update writes a key at the revision last read.
func (e LazyEntries) Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error) {
	kv, err := e.l.Get(ctx)
	if err != nil {
		return 0, err
	}
	return kv.Update(ctx, key, value, revision)
}
