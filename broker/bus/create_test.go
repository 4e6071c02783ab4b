package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/natscluster"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
)

// TestRetryableCreate: what a cluster answers while it has no meta leader
// (a node frozen or killed), or while it has too few nodes up to place the
// replicas, is retried like a time-out; refusals are not.
func TestRetryableCreate(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{context.DeadlineExceeded, true},
		{nats.ErrTimeout, true},
		// As a worker started during a 20 s SIGSTOP of a node saw it.
		{fmt.Errorf("create kv bucket pagewatch_unsubscribes: %w", &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}), true},
		// As a sweeper started with one node of three down saw it.
		{fmt.Errorf("create kv bucket pagewatch_sweeps: %w", &jetstream.APIError{Code: 400, ErrorCode: 10005, Description: "no suitable peers for placement, peer offline"}), true},
		{&jetstream.APIError{Code: 503, ErrorCode: jetstream.JSErrCodeJetStreamNotEnabled, Description: "JetStream not enabled"}, false},
		{&jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamNameInUse, Description: "stream name already in use"}, false},
		{errors.New("nats: connection closed"), false},
	} {
		if got := retryableCreate(c.err); got != c.want {
			t.Errorf("retryableCreate(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestCreateWaitsAndSaysWhy: a creation that keeps failing for a reason
// that passes waits as long as it takes (no budget after which the daemon
// gives up and exits), Ping says why meanwhile, and is fine again once it
// succeeds; one the server refuses fails at once.
func TestCreateWaitsAndSaysWhy(t *testing.T) {
	b := &Bus{waits: &creations{}, log: slog.New(slog.DiscardHandler)}
	offline := &jetstream.APIError{Code: 400, ErrorCode: 10005, Description: "no suitable peers for placement, peer offline"}
	calls := 0
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := createWithRetry(context.Background(), b, "kv bucket pagewatch_sweeps", func(context.Context) (int, error) {
			calls++
			select {
			case <-release:
				return 1, nil
			default:
				return 0, offline
			}
		})
		done <- err
	}()
	testcheck.Eventually(t, 10*time.Second, "the wait reported", func() error {
		err := b.waits.err()
		if err == nil || !strings.Contains(err.Error(), "waiting to create kv bucket pagewatch_sweeps") || !strings.Contains(err.Error(), "peer offline") {
			return fmt.Errorf("waits: %v", err)
		}
		return nil
	})
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("createWithRetry: %v", err)
	}
	if err := b.waits.err(); err != nil {
		t.Errorf("after the creation: %v", err)
	}
	refused := &jetstream.APIError{Code: 503, ErrorCode: jetstream.JSErrCodeJetStreamNotEnabled, Description: "JetStream not enabled"}
	n := 0
	if _, err := createWithRetry(context.Background(), b, "stream X", func(context.Context) (int, error) { n++; return 0, refused }); !errors.Is(err, refused) || n != 1 {
		t.Errorf("a refusal: %v after %d calls, want it at once", err, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := createWithRetry(ctx, b, "stream Y", func(context.Context) (int, error) { return 0, offline }); err == nil {
		t.Error("a wait whose context ended: no error")
	}
	if err := b.waits.err(); err != nil {
		t.Errorf("after a wait given up: %v", err)
	}
}

// TestClusterCreateWithANodeDown: on a 3-node cluster with one node down
// since the others started, a stream or bucket at replicas 3 cannot be
// placed (10005 "no suitable peers for placement"). Creating it waits,
// Ping says why, and the creation completes once the node is back.
func TestClusterCreateWithANodeDown(t *testing.T) {
	c := natscluster.Start(t, 3, natscluster.Build(t, t.TempDir()))
	const down = 2
	c.LoseNode(t, down, time.Minute)
	cfg := DefaultConfig()
	cfg.URL, cfg.Replicas = c.URL, 3
	b, err := Connect(context.Background(), cfg, "cluster test", slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	done := make(chan error, 1)
	go func() {
		_, err := b.KV(context.Background(), BucketSweeps, 0)
		done <- err
	}()
	var why error
	testcheck.Eventually(t, 30*time.Second, "Ping to say why it waits", func() error {
		select {
		case err := <-done:
			t.Fatalf("the bucket's creation returned with a node down: %v", err)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		why = b.Ping(ctx)
		if why == nil || !strings.Contains(why.Error(), "waiting to create kv bucket pagewatch_sweeps") || !strings.Contains(why.Error(), "no suitable peers for placement") {
			return fmt.Errorf("Ping: %v", why)
		}
		return nil
	})
	t.Logf("with %s down, Ping: %v", c.Nodes[down].Name, why)
	time.Sleep(3 * time.Second) // still waiting, not given up
	select {
	case err := <-done:
		t.Fatalf("the bucket's creation returned with a node down: %v", err)
	default:
	}
	c.Restart(t, down)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after the node came back: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the bucket was not created within a minute of the node's return")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.Ping(ctx); err != nil {
		t.Errorf("Ping after the creation: %v", err)
	}
}

// testWriter sends the bus's log lines to the test's.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestPingSaysAStreamIsGone: a stream or bucket the daemon created that
// NATS no longer has (a store lost in a power cut, or deleted) fails
// Ping, naming it: nothing recreates it while the daemon runs, and its
// requests fail meanwhile, so /readyz must not say "ok".
func TestPingSaysAStreamIsGone(t *testing.T) {
	ns := natstest.Start(t)
	cfg := DefaultConfig()
	cfg.URL = ns.URL
	b, err := Connect(context.Background(), cfg, "ping test", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.HitsStream(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.KV(ctx, BucketSweeps, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Ping(ctx); err != nil {
		t.Fatalf("Ping with everything there: %v", err)
	}
	if err := b.JS.DeleteKeyValue(ctx, b.BucketName(BucketSweeps)); err != nil {
		t.Fatal(err)
	}
	if err := b.Ping(ctx); err == nil || !strings.Contains(err.Error(), "stream KV_pagewatch_sweeps is gone") {
		t.Errorf("Ping with the bucket gone: %v", err)
	}
	if _, err := b.KV(ctx, BucketSweeps, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Ping(ctx); err != nil {
		t.Errorf("Ping with the bucket back: %v", err)
	}
}
