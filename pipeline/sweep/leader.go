package sweep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/lock"
)

// leaderKey is the one lease all sweeper replicas compete for.
const leaderKey = "sweeper"

// leadership is a sweeper's claim to be the one that sweeps. Only the
// leader queries ClickHouse; if it dies, its lease lapses after
// leader_ttl and the next replica to try takes over. Claims on states
// stay revision-checked, so even two leaders (a lease lost mid-sweep)
// could not enqueue a crossing twice.
type leadership struct {
	kv    jetstream.KeyValue
	owner string
	ttl   time.Duration

	mu    sync.Mutex
	lease *lock.Lease
	lost  bool
}

func newLeadership(kv jetstream.KeyValue, ttl time.Duration) *leadership {
	host, _ := os.Hostname()
	return &leadership{kv: kv, owner: fmt.Sprintf("%s/%d", host, os.Getpid()), ttl: ttl}
}

// attach gives the leadership its lease bucket (Sweeper.open).
func (l *leadership) attach(kv jetstream.KeyValue) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.kv = kv
}

// ensure reports whether we lead, taking the lease if it is free.
func (l *leadership) ensure(ctx context.Context) (bool, string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lease != nil && !l.lost {
		return true, l.owner, nil
	}
	l.lease, l.lost = nil, false
	lease, err := lock.Acquire(ctx, l.kv, leaderKey, l.owner, l.ttl, func() {
		l.mu.Lock()
		l.lost = true
		l.mu.Unlock()
	})
	var held *lock.HeldError
	if errors.As(err, &held) {
		return false, held.Holder, nil
	}
	if err != nil {
		return false, "", fmt.Errorf("sweeper lease: %w", err)
	}
	l.lease = lease
	return true, l.owner, nil
}

// release gives the lease up, so a replica takes over without waiting for
// it to lapse.
func (l *leadership) release(ctx context.Context) {
	l.mu.Lock()
	lease := l.lease
	l.lease = nil
	l.mu.Unlock()
	if lease != nil {
		_ = lease.Release(ctx)
	}
}
