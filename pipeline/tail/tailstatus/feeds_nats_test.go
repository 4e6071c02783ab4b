package tailstatus_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
	"github.com/pagewatch/pagewatch/pipeline/tail/tailstatus"
)

// The adapter reads the tailers' records and the loaders' backlog from a
// real NATS: a durable consumer's unacknowledged hits count, an
// ephemeral reader's do not.
func TestFeedsReadsRecordsAndTheLoadersBacklog(t *testing.T) {
	ns := natstest.Start(t)
	cfg := bus.DefaultConfig()
	cfg.URL = ns.URL
	ctx := context.Background()
	b, err := bus.Connect(ctx, cfg, t.Name(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	now := time.Now().UTC()

	fs, err := tailstatus.Feeds{Bus: b}.Feeds(ctx, []string{"example.com"}, now)
	if f := fs["example.com"]; err != nil || f == nil || f.Logs != 0 || f.Unloaded != 0 {
		t.Fatalf("before any tailer or hit: %+v, %v; want nothing", f, err)
	}

	kv, err := b.KV(ctx, tailstatus.Bucket, tailstatus.TTL)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := json.Marshal(tailstatus.Tailer{Instance: "web-1", Host: "h1", At: now, Interval: tailstatus.Interval,
		Inputs: []tailstatus.Input{{Kind: tailstatus.KindFile, Name: "/var/log/nginx/access.log"}}})
	if _, err := kv.Put(ctx, tailstatus.Key("web-1", "h1"), rec); err != nil {
		t.Fatal(err)
	}
	stream, err := b.HitsStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := b.JS.Publish(ctx, b.HitsSubject("web-1", "access"), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := stream.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "loader", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{}); err != nil {
		t.Fatal(err)
	}

	fs, err = tailstatus.Feeds{Bus: b}.Feeds(ctx, []string{"example.com", "other.example"}, now)
	if err != nil {
		t.Fatal(err)
	}
	f := fs["example.com"]
	if f.Logs != 1 || f.AtEnd != 1 || f.Unloaded != 3 {
		t.Errorf("feeds %+v, want web-1's log of every virtual host at its end and 3 hits unloaded", f)
	}
	if got, want := f.Text(), "the loaders have 3 hits of all sites not yet stored"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if o := fs["other.example"]; o == nil || o.Logs != 1 || o.Unloaded != 3 {
		t.Errorf("the other site's feeds %+v, read with the same records", o)
	}
}
