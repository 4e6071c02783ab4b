package sweep

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// unanswered is a KV bucket whose requests never get a reply, as one sent
// to a NATS node that died before answering.
type unanswered struct{ jetstream.KeyValue }

func (unanswered) Get(ctx context.Context, _ string) (jetstream.KeyValueEntry, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (unanswered) Update(ctx context.Context, _ string, _ []byte, _ uint64) (uint64, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

func (unanswered) Create(ctx context.Context, _ string, _ []byte, _ ...jetstream.KVCreateOpt) (uint64, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

func (unanswered) Put(ctx context.Context, _ string, _ []byte) (uint64, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

// TestStateRequestsBoundedWithinASweep: a state read or write whose reply
// never comes fails after the store's opTimeout, not after the sweep's own
// deadline (sweep_timeout, 5 min), which held the sweep and the leader's
// lease on a NATS cluster whose nodes were restarted.
func TestStateRequestsBoundedWithinASweep(t *testing.T) {
	s := newStateStore(unanswered{}, nil)
	s.opTimeout = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // as Sweep gives a sweep
	defer cancel()
	for name, op := range map[string]func() error{
		"put (update, then the refresh)": func() error { _, err := s.put(ctx, "k", pageState{}, 7); return err },
		"put (create)":                   func() error { _, err := s.put(ctx, "k", pageState{}, 0); return err },
		"fetch":                          func() error { _, _, err := s.fetch(ctx, "k"); return err },
		"progress":                       func() error { _, err := s.progress(ctx); return err },
		"setProgress":                    func() error { return s.setProgress(ctx, time.Now()) },
	} {
		start := time.Now()
		err := op()
		took := time.Since(start)
		if err == nil {
			t.Errorf("%s: no error from a request never answered", name)
		}
		// put waits for its write and then for its refresh.
		if took > 4*s.opTimeout {
			t.Errorf("%s took %s; want about opTimeout (%s) per request, not the sweep's deadline", name, took, s.opTimeout)
		}
	}
}
