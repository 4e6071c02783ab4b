package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/console"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/internal/testenv"
	"github.com/pagewatch/pagewatch/pipeline/notify"
)

// deadLetter publishes what the worker publishes when it gives up on a
// delivery (pipeline/notify deadLetter), and the ledger entry it writes.
func deadLetter(t *testing.T, b *bus.Bus, sent jetstream.KeyValue, x crossing.Crossing, receiver string) {
	t.Helper()
	ctx := context.Background()
	data, _ := json.Marshal(x)
	m := nats.NewMsg(b.DeadLetterSubject("jobs"))
	m.Data = data
	m.Header.Set(bus.HeaderDeadReason, "550 mailbox unavailable")
	m.Header.Set(bus.HeaderDeadSubject, b.JobsSubject(bus.Key(x.Site, x.Path)))
	m.Header.Set(bus.HeaderDeadReceiver, receiver)
	if _, err := b.JS.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	if _, err := sent.Put(ctx, notify.LedgerKey(x.Key, receiver), []byte(`{"state":"dead_lettered"}`)); err != nil {
		t.Fatal(err)
	}
}

func TestDeadLettersRetryAndDiscard(t *testing.T) {
	ctx := context.Background()
	b, _ := testenv.NATS(t, testenv.Logger(t))
	if _, err := b.DeadLetterStream(ctx); err != nil {
		t.Fatal(err)
	}
	jobs, err := b.JobsStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sent, err := b.KV(ctx, bus.BucketSent, 0)
	if err != nil {
		t.Fatal(err)
	}
	x := crossing.Crossing{Key: "pricing.k.1", Rule: "pricing", Site: "example.com", Path: "/<script>", Count: 111, CrossedAt: time.Now()}
	deadLetter(t, b, sent, x, notify.DefaultReceiver)
	y := x
	y.Key = "pricing.k.2"
	deadLetter(t, b, sent, y, "slack")
	// The other receiver of the first job delivered: its entry stays.
	if _, err := sent.Put(ctx, notify.LedgerKey(x.Key, "slack"), []byte(`{"state":"sent"}`)); err != nil {
		t.Fatal(err)
	}
	hits := nats.NewMsg(b.DeadLetterSubject("hits"))
	hits.Data = []byte("not PWH2")
	hits.Header.Set(bus.HeaderDeadReason, "bad magic")
	hits.Header.Set(bus.HeaderDeadSubject, b.HitsSubject("web1", "abc"))
	if _, err := b.JS.PublishMsg(ctx, hits); err != nil {
		t.Fatal(err)
	}

	n := console.NewNATS(b)
	ls, err := n.List(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 3 || ls[0].Kind != "hits" || ls[1].Key != "pricing.k.2" || ls[1].Receiver != "slack" || ls[2].Path != "/<script>" || ls[2].Reason != "550 mailbox unavailable" {
		t.Fatalf("listed %+v", ls)
	}
	d, err := n.Retry(ctx, ls[2].Seq)
	if err != nil {
		t.Fatal(err)
	}
	if d.Key != x.Key {
		t.Errorf("retried %+v", d)
	}
	// Back on the job's page subject, its receiver's ledger entry gone,
	// the other receiver's kept.
	m, err := jobs.GetLastMsgForSubject(ctx, b.JobsSubject(bus.Key(x.Site, x.Path)))
	if err != nil {
		t.Fatal(err)
	}
	var back crossing.Crossing
	if err := json.Unmarshal(m.Data, &back); err != nil || back.Key != x.Key || back.Count != 111 {
		t.Errorf("republished job %s: %v", m.Data, err)
	}
	if _, err := sent.Get(ctx, notify.LedgerKey(x.Key, notify.DefaultReceiver)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("ledger entry of the retried delivery: %v, want gone", err)
	}
	if _, err := sent.Get(ctx, notify.LedgerKey(x.Key, "slack")); err != nil {
		t.Errorf("ledger entry of the delivered receiver: %v, want kept", err)
	}
	if _, err := n.Retry(ctx, ls[2].Seq); err == nil {
		t.Error("a second retry of one dead letter succeeded")
	}
	if _, err := n.Discard(ctx, ls[1].Seq); err != nil {
		t.Fatal(err)
	}
	// A hits batch goes back under the hits stream, not on the tailer's
	// subject.
	if _, err := b.HitsStream(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Retry(ctx, ls[0].Seq); err != nil {
		t.Fatal(err)
	}
	hs, _ := b.JS.Stream(ctx, b.HitsStreamName())
	if m, err := hs.GetLastMsgForSubject(ctx, b.HitsSubject("console-retry", "3")); err != nil || string(m.Data) != "not PWH2" || m.Header.Get(bus.HeaderDeadReason) != "" {
		t.Errorf("retried hits batch: %v %+v", err, m)
	}
	if ls, err := n.List(ctx, 10); err != nil || len(ls) != 0 {
		t.Errorf("left: %+v, %v", ls, err)
	}
	ps, err := n.Pipeline(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.Streams) != 3 || len(ps.Files) != 1 {
		t.Errorf("pipeline %+v", ps)
	}
	if _, ok, err := n.State(ctx, "pricing", "example.com", "/p", false); err != nil || ok {
		t.Errorf("state of a page the sweeper never saw: %v %v", ok, err)
	}
}
