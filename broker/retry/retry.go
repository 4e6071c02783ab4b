// Package retry is the one backoff policy of pagewatch: capped exponential
// with jitter, so many processes coming back after an outage do not retry
// in step.
package retry

import (
	"context"
	"math/rand/v2"
	"time"
)

// Delay is the wait before retry number attempt (0-based): base doubling
// up to limit, then drawn uniformly from the upper half of that.
func Delay(attempt int, base, limit time.Duration) time.Duration {
	d := base << min(attempt, 30)
	if d <= 0 || d > limit {
		d = limit
	}
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// Sleep waits d or until ctx is done, returning ctx's error then.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
