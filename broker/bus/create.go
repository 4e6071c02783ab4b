package bus

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/retry"
)

// createBudget is how long creating a stream or bucket keeps being
// retried. On a cluster, daemons starting together (a rollout) create the
// same streams and buckets at once; the server then leaves some of those
// requests unanswered until the JetStream API's own 5 s timeout, while
// the first creation completes. Asking again succeeds, so a daemon retries
// rather than exiting on what is a start-up race.
const createBudget = time.Minute

// createWithRetry calls create until it succeeds, fails for a reason other
// than a time-out, ctx ends or createBudget has passed.
func createWithRetry[T any](ctx context.Context, create func(context.Context) (T, error)) (T, error) {
	deadline := time.Now().Add(createBudget)
	for attempt := 0; ; attempt++ {
		v, err := create(ctx)
		if err == nil || !retryableCreate(err) || ctx.Err() != nil || time.Now().After(deadline) {
			return v, err
		}
		if err := retry.Sleep(ctx, retry.Delay(attempt, 100*time.Millisecond, 2*time.Second)); err != nil {
			return v, err
		}
	}
}

// clusterNotAvailable is nats-server's JSClusterNotAvailErr (HTTP-like
// code 503), which nats.go names no constant for.
const clusterNotAvailable jetstream.ErrorCode = 10008

// retryableCreate: the request got no answer in time, or the cluster
// answered that JetStream is temporarily unavailable, as it does while
// its meta leader is gone and another not yet elected (a node frozen or
// killed): a worker started then exited with that 503 mid-run. Anything
// else (no JetStream on the server, a config the server refuses) fails
// at once.
func retryableCreate(err error) bool {
	var api *jetstream.APIError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		(errors.As(err, &api) && api.ErrorCode == clusterNotAvailable)
}
