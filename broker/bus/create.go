package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/retry"
)

// createWarnEvery is how often a creation that keeps failing for a
// reason that passes is logged again, after its first failure.
const createWarnEvery = 30 * time.Second

// createWithRetry calls create until it succeeds, fails for a reason no
// wait can fix, or ctx ends. what names the stream or bucket ("kv bucket
// pagewatch_sweeps") for the log and for /readyz.
//
// On a cluster, daemons starting together (a rollout) create the same
// streams and buckets at once; the server then leaves some of those
// requests unanswered until the JetStream API's own 5 s timeout, while
// the first creation completes. A cluster with a node down, or still
// forming, cannot place a replicated stream at all until the node is back.
// Neither is a reason to exit: a daemon that did would only be restarted
// to try again, and one started mid-outage would never come up on its own.
// So the daemon waits, as long as it takes, and says why: each wait is
// logged, and Ping (the daemon's /readyz) fails with it until the
// creation succeeds.
func createWithRetry[T any](ctx context.Context, b *Bus, what string, create func(context.Context) (T, error)) (T, error) {
	var warned time.Time
	defer b.waits.done(what)
	for attempt := 0; ; attempt++ {
		v, err := create(ctx)
		if err == nil || !retryableCreate(err) || ctx.Err() != nil {
			if err == nil && !warned.IsZero() {
				b.logger().Info("nats: created after waiting", "what", what, "attempts", attempt+1)
			}
			return v, err
		}
		b.waits.set(what, err)
		if time.Since(warned) >= createWarnEvery {
			b.logger().Warn("nats: cannot create yet; waiting and retrying (not ready meanwhile)", "what", what, "attempts", attempt+1, "err", err)
			warned = time.Now()
		}
		if err := retry.Sleep(ctx, retry.Delay(attempt, 100*time.Millisecond, 2*time.Second)); err != nil {
			return v, err
		}
	}
}

// Codes of nats-server's JetStream API errors that nats.go names no
// constant for.
const (
	// clusterNotAvailable is JSClusterNotAvailErr (503): no meta leader.
	clusterNotAvailable jetstream.ErrorCode = 10008
	// clusterNoPeers is JSClusterNoPeersErrF (400): the stream's replicas
	// cannot be placed, e.g. "no suitable peers for placement, peer
	// offline" with one node of three down.
	clusterNoPeers jetstream.ErrorCode = 10005
)

// retryableCreate: the request got no answer in time, or the cluster
// answered that JetStream is temporarily unavailable, as it does while
// its meta leader is gone and another not yet elected (a node frozen or
// killed: a worker started then exited with that 503 mid-run), or that it
// has too few peers to place the replicas (a node down, or a cluster
// still forming: a sweeper started then exited with that 400). Anything
// else (no JetStream on the server, a config the server refuses) fails
// at once.
func retryableCreate(err error) bool {
	var api *jetstream.APIError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		(errors.As(err, &api) && (api.ErrorCode == clusterNotAvailable || api.ErrorCode == clusterNoPeers))
}

// creations are the creations waiting on NATS, by what they create, with
// the last error of each, and the streams created (a bucket is stream
// KV_<bucket>).
type creations struct {
	mu      sync.Mutex
	waiting map[string]error
	streams map[string]bool
}

// created notes a stream the daemon created and uses.
func (c *creations) created(stream string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.streams == nil {
		c.streams = map[string]bool{}
	}
	c.streams[stream] = true
}

// gone names a stream the daemon created that NATS no longer has: one
// whose store NATS lost (Jepsen saw whole streams go after a power cut of
// several nodes) or that someone deleted. Nothing recreates it while the
// daemon runs: its publishes, fetches and KV requests fail until then, so
// /readyz says so rather than "ok". Other errors are left to the rest of
// Ping.
func (c *creations) gone(ctx context.Context, js jetstream.JetStream) error {
	c.mu.Lock()
	names := make([]string, 0, len(c.streams))
	for n := range c.streams {
		names = append(names, n)
	}
	c.mu.Unlock()
	sort.Strings(names)
	for _, n := range names {
		if _, err := js.Stream(ctx, n); errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("stream %s is gone from NATS (its store lost, or the stream deleted): what this daemon does with it fails until it is created again, as a restart does", n)
		}
	}
	return nil
}

func (c *creations) set(what string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiting == nil {
		c.waiting = map[string]error{}
	}
	c.waiting[what] = err
}

func (c *creations) done(what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.waiting, what)
}

// err says what is waiting and why, or nil.
func (c *creations) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.waiting) == 0 {
		return nil
	}
	names := make([]string, 0, len(c.waiting))
	for w := range c.waiting {
		names = append(names, w)
	}
	sort.Strings(names)
	err := fmt.Errorf("waiting to create %s: %w", names[0], c.waiting[names[0]])
	if len(names) > 1 {
		err = fmt.Errorf("%w (and %d more)", err, len(names)-1)
	}
	return err
}

func (b *Bus) logger() *slog.Logger {
	if b.log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return b.log
}
