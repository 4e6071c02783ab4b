// Package sweepstatus is what the leading sweeper records of each sweep
// (when it ran, how long it took, whether it failed) in NATS KV, and a
// reader of it for the console, which imports this and not the sweeper.
// The metrics say the same to Prometheus; the console has no Prometheus.
package sweepstatus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
)

// Bucket holds the records (nats.prefix "_sweep_status" in JetStream).
// No TTL: the last sweep stays known however long ago it was.
const Bucket = "sweep_status"

// Keys: the last sweep, and the last that succeeded.
const (
	KeyLast   = "last"
	KeyLastOK = "last_ok"
)

// Sweep is one sweep's record.
type Sweep struct {
	Owner   string        `json:"owner"` // host/pid of the sweeper that led it
	Started time.Time     `json:"started"`
	Took    time.Duration `json:"took"`
	Error   string        `json:"error,omitempty"`
}

// Status is what Read returns: the last sweep, and the last that
// succeeded (the same one when the last did); nil where none was recorded.
type Status struct {
	Last, LastOK *Sweep
}

// Write records a sweep: as the last, and as the last that succeeded
// when it did. The bucket is looked up each time (a sweep is seconds
// apart; this is one request) and made if no sweep made it yet.
func Write(ctx context.Context, b *bus.Bus, s Sweep) error {
	kv, err := b.JS.KeyValue(ctx, b.BucketName(Bucket))
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = b.KV(ctx, Bucket, 0)
	}
	if err != nil {
		return fmt.Errorf("bucket %s: %w", Bucket, err)
	}
	body, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, KeyLast, body); err != nil {
		return fmt.Errorf("bucket %s: %w", Bucket, err)
	}
	if s.Error == "" {
		if _, err := kv.Put(ctx, KeyLastOK, body); err != nil {
			return fmt.Errorf("bucket %s: %w", Bucket, err)
		}
	}
	return nil
}

// Read returns the sweeps recorded; none before the first sweep.
func Read(ctx context.Context, b *bus.Bus) (Status, error) {
	var st Status
	kv, err := b.JS.KeyValue(ctx, b.BucketName(Bucket))
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("bucket %s: %w", Bucket, err)
	}
	for key, to := range map[string]**Sweep{KeyLast: &st.Last, KeyLastOK: &st.LastOK} {
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return st, fmt.Errorf("bucket %s key %s: %w", Bucket, key, err)
		}
		var s Sweep
		if err := json.Unmarshal(e.Value(), &s); err != nil {
			return st, fmt.Errorf("bucket %s key %s: %w", Bucket, key, err)
		}
		*to = &s
	}
	return st, nil
}
