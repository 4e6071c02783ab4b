package bus

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestRetryableCreate: what a cluster answers while it has no meta leader
// (a node frozen or killed) is retried like a time-out; refusals are not.
func TestRetryableCreate(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{context.DeadlineExceeded, true},
		{nats.ErrTimeout, true},
		// As a worker started during a 20 s SIGSTOP of a node saw it.
		{fmt.Errorf("create kv bucket pagewatch_unsubscribes: %w", &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}), true},
		{&jetstream.APIError{Code: 503, ErrorCode: jetstream.JSErrCodeJetStreamNotEnabled, Description: "JetStream not enabled"}, false},
		{&jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamNameInUse, Description: "stream name already in use"}, false},
		{errors.New("nats: connection closed"), false},
	} {
		if got := retryableCreate(c.err); got != c.want {
			t.Errorf("retryableCreate(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
