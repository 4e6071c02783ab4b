package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/broker/lock"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testenv"
)

const ttl = 3 * time.Second

func TestLeaseLifecycle(t *testing.T) {
	b, _ := testenv.NATS(t, testenv.Logger(t))
	ctx := context.Background()
	kv, err := b.KV(ctx, bus.BucketLocks, ttl)
	if err != nil {
		t.Fatal(err)
	}
	lost := make(chan struct{}, 1)
	held, err := lock.Acquire(ctx, kv, "page", "a", ttl, func() { lost <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Acquire(ctx, kv, "page", "b", ttl, nil); !errors.Is(err, lock.ErrLocked) {
		t.Fatalf("second acquire: %v, want ErrLocked", err)
	}
	first := held.Token()
	time.Sleep(2 * ttl) // renewed meanwhile: still held, with a newer token
	if _, err := lock.Acquire(ctx, kv, "page", "b", ttl, nil); !errors.Is(err, lock.ErrLocked) {
		t.Fatalf("acquire after 2 x ttl while renewed: %v, want ErrLocked", err)
	}
	if held.Token() <= first {
		t.Fatalf("token did not grow: %d then %d", first, held.Token())
	}
	select {
	case <-lost:
		t.Fatal("lease reported lost while renewing fine")
	default:
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	next, err := lock.Acquire(ctx, kv, "page", "b", ttl, nil)
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	if next.Token() <= held.Token() {
		t.Fatalf("fencing token did not grow across holders")
	}
	_ = next.Release(ctx)
}

func TestDeadHolderLapses(t *testing.T) {
	b, _ := testenv.NATS(t, testenv.Logger(t))
	ctx := context.Background()
	kv, err := b.KV(ctx, bus.BucketLocks, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, "page", []byte("killed -9")); err != nil { // never renewed
		t.Fatal(err)
	}
	start := time.Now()
	testcheck.Eventually(t, 3*ttl, "the dead holder's lock to lapse", func() error {
		l, err := lock.Acquire(ctx, kv, "page", "b", ttl, nil)
		if err == nil {
			_ = l.Release(ctx)
			return nil
		}
		if !errors.Is(err, lock.ErrLocked) {
			t.Fatalf("after %s: %v", time.Since(start), err)
		}
		return err
	})
	t.Logf("dead holder's lock lapsed after %s (ttl %s)", time.Since(start).Round(100*time.Millisecond), ttl)
}

func TestLockedReportsHolder(t *testing.T) {
	b, _ := testenv.NATS(t, testenv.Logger(t))
	ctx := context.Background()
	kv, err := b.KV(ctx, bus.BucketLocks, ttl)
	if err != nil {
		t.Fatal(err)
	}
	held, err := lock.Acquire(ctx, kv, "page", "worker/a", ttl, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Release(ctx) }()
	_, err = lock.Acquire(ctx, kv, "page", "b", ttl, nil)
	var he *lock.HeldError
	if !errors.As(err, &he) || !errors.Is(err, lock.ErrLocked) {
		t.Fatalf("second acquire: %v, want a *HeldError matching ErrLocked", err)
	}
	if he.Holder != "worker/a" { // the owner as given, without the lease's nonce
		t.Fatalf("holder %q, want %q", he.Holder, "worker/a")
	}
}
