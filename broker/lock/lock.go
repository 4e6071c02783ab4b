// Package lock is a lease in NATS KV: a per-key lock that lapses on its
// own when its holder dies. The bucket's TTL is the lease; the holder
// renews it with revision-checked updates, and the revision doubles as a
// fencing token: a holder whose lease lapsed and was taken by another
// fails its next renewal and learns it lost the lock.
package lock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrLocked means another holder has the lease. Callers branch on it: a
// locked page is deferred, not failed.
var ErrLocked = errors.New("locked by another holder")

// HeldError is the error Acquire returns when another holder has the
// lease; errors.Is(err, ErrLocked) matches it. Holder is the owner that
// holder passed to Acquire (without the per-lease nonce), or "" when the
// lock was released before it could be read.
type HeldError struct {
	Holder string
}

func (e *HeldError) Error() string {
	if e.Holder == "" {
		return ErrLocked.Error()
	}
	return ErrLocked.Error() + " (" + e.Holder + ")"
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *HeldError) Is(target error) bool { return target == ErrLocked }

// Lease is a held lock.
type Lease struct {
	kv    jetstream.KeyValue
	key   string
	owner []byte
	ttl   time.Duration

	mu       sync.Mutex
	rev      uint64
	lost     bool
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// Acquire takes the lock on key, or returns a *HeldError (ErrLocked) at
// once, naming the holder. ttl must be
// the bucket's TTL. Until Release, the lease is renewed every ttl/3;
// onLost is called (once, from another goroutine) if a renewal fails, so
// the holder can stop work it no longer owns.
func Acquire(ctx context.Context, kv jetstream.KeyValue, key, owner string, ttl time.Duration, onLost func()) (*Lease, error) {
	// The value is unique per lease, so a renewal whose reply was lost can
	// tell its own write from another holder's.
	owner = fmt.Sprintf("%s/%x", owner, rand.Uint64())
	rev, err := kv.Create(ctx, key, []byte(owner))
	if errors.Is(err, jetstream.ErrKeyExists) {
		// Create does not return the value it found, so the holder is
		// read here, on the conflict path only. A failed read still
		// reports the conflict.
		held := &HeldError{}
		if e, gerr := kv.Get(ctx, key); gerr == nil {
			held.Holder = holderOf(e.Value())
		}
		return nil, held
	}
	if err != nil {
		return nil, fmt.Errorf("acquire lock %s: %w", key, err)
	}
	l := &Lease{kv: kv, key: key, owner: []byte(owner), ttl: ttl, rev: rev,
		stop: make(chan struct{}), done: make(chan struct{})}
	go l.renew(onLost)
	return l, nil
}

// holderOf strips the per-lease nonce from a lock value.
func holderOf(value []byte) string {
	v := string(value)
	if i := strings.LastIndexByte(v, '/'); i >= 0 {
		return v[:i]
	}
	return v
}

// Token is the revision the lease holds now: a fencing token that grows
// with every renewal and every new holder.
func (l *Lease) Token() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rev
}

func (l *Lease) renew(onLost func()) {
	defer close(l.done)
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.ttl/3)
		l.mu.Lock()
		rev, err := l.kv.Update(ctx, l.key, l.owner, l.rev)
		switch {
		case err == nil:
			l.rev = rev
		case errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyNotFound):
			// Either another holder took the key, or our previous renewal
			// landed and only its reply was lost: the value tells which.
			if e, gerr := l.kv.Get(ctx, l.key); gerr == nil && bytes.Equal(e.Value(), l.owner) {
				l.rev = e.Revision()
			} else {
				l.lost = true
			}
		}
		lost := l.lost
		l.mu.Unlock()
		cancel()
		// A renewal that failed for a network blip is tried again next
		// tick; the lease only lapses if that goes on for the whole TTL.
		if lost {
			if onLost != nil {
				onLost()
			}
			return
		}
	}
}

// Abandon stops renewing without deleting the lock, so it lapses after
// its TTL as if the holder had died: what tests of a takeover need.
func (l *Lease) Abandon() {
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.done
}

// Release stops renewing and deletes the lock if we still hold it.
func (l *Lease) Release(ctx context.Context) error {
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost {
		return nil
	}
	err := l.kv.Delete(ctx, l.key, jetstream.LastRevision(l.rev))
	if err != nil && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("release lock %s: %w", l.key, err)
	}
	return nil
}
