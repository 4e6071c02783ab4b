package tail

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
	"github.com/pagewatch/pagewatch/pipeline/pageview"
)

// A batch stored by an attempt whose ack was lost, retried after
// JetStream has forgotten its message ID (an outage longer than the
// duplicate window), is found in the stream and not stored again. The
// window is shortened to 200ms here; it is 2 minutes in pagewatch.
func TestRetryPastDuplicateWindowStoresOnce(t *testing.T) {
	ns := natstest.Start(t)
	bcfg := bus.DefaultConfig()
	bcfg.URL = ns.URL
	logger := slog.New(slog.DiscardHandler)
	b, err := bus.Connect(context.Background(), bcfg, "test", logger)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	hits, err := b.JS.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: b.HitsStreamName(), Subjects: []string{bcfg.Prefix + ".hits.>"}, Storage: jetstream.FileStorage,
		Duplicates: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Instance, cfg.PublishTimeout = "test", 300*time.Millisecond
	pages, err := pageview.New(cfg.Pages)
	if err != nil {
		t.Fatal(err)
	}
	env := newStreamEnv(cfg, b, hits, logger, newMetrics(prometheus.NewRegistry()), lineRules{pages: pages})
	if env.dedup != 200*time.Millisecond {
		t.Fatalf("dedup window %s", env.dedup)
	}
	s := env.newStream("stdin", "stdin", DefaultStreamInput(), nil)
	s.run(ctx, time.Second)
	defer s.close()

	// Someone else's message on the subject, then "our" batch, stored by
	// an attempt whose ack never came back.
	msg := func(id string) *nats.Msg {
		m := nats.NewMsg(s.subject)
		m.Data = []byte("PWH1")
		m.Header.Set(jetstream.MsgIDHeader, id)
		return m
	}
	if _, err := b.JS.PublishMsg(ctx, msg("other.1")); err != nil {
		t.Fatal(err)
	}
	floor := s.acked.Load()
	if _, err := b.JS.PublishMsg(ctx, msg("test.stdin.1.1")); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.landed(ctx, floor, "test.stdin.1.1"); !ok || err != nil {
		t.Fatalf("landed: %v, %v", ok, err)
	}
	if ok, err := s.landed(ctx, floor, "test.stdin.1.2"); ok || err != nil {
		t.Fatalf("landed of a batch never sent: %v, %v", ok, err)
	}

	// Its retry, NATS being down for longer than the window: nothing is
	// sent while it is down (the client would send it on reconnect), and
	// once it is back the batch is looked for before being sent again.
	sent := time.Now()
	time.Sleep(300 * time.Millisecond)
	ns.Stop()
	// A retry comes publish_timeout after the attempt whose ack was lost:
	// by then the client has seen the connection go. (An attempt written
	// in the moment before it notices is sent again on reconnect, past
	// any check: the residual risk, which this test does not take.)
	testcheck.Eventually(t, 10*time.Second, "the client to see the server go", func() bool { return !b.Conn.IsConnected() })
	done := make(chan error, 1)
	go func() {
		done <- s.publish(ctx, &batch{msg: msg("test.stdin.1.1"), lines: 1, sent: sent, floor: floor})
	}()
	time.Sleep(500 * time.Millisecond)
	ns.Restart(t)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("publish never returned")
	}
	info, err := hits.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2 {
		t.Fatalf("stream holds %d messages, want 2: the retry was stored again", info.State.Msgs)
	}
}
