package load

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A fetch that ended because the server sent the whole batch, or because
// nothing came in time, is no failure: backing off on it stalled the
// loader on a NATS cluster, which ends fetches with "batch completed".
func TestIdleFetchEndsAreNotFailures(t *testing.T) {
	for _, err := range []error{nats.ErrTimeout, context.DeadlineExceeded, jetstream.ErrNoMessages, jetstream.ErrBatchCompleted,
		fmt.Errorf("fetch: %w", jetstream.ErrBatchCompleted)} {
		if !idle(err) {
			t.Errorf("idle(%v) = false", err)
		}
	}
	for _, err := range []error{nats.ErrNoResponders, jetstream.ErrConsumerDeleted, errors.New("boom")} {
		if idle(err) {
			t.Errorf("idle(%v) = true", err)
		}
	}
}
