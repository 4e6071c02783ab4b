package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
)

// fwdMsg reads metadata from both forms of the ack subject as nats.go
// does (compared with nats.go's own parser, reached through nats.Msg).
func TestFwdMsgMetadata(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		want        jetstream.MsgMetadata
	}{
		{"9 tokens", "$JS.ACK.PAGEWATCH_JOBS.worker.3.17.42.1700000000123456789.5",
			jetstream.MsgMetadata{Stream: "PAGEWATCH_JOBS", Consumer: "worker", NumDelivered: 3, NumPending: 5,
				Sequence: jetstream.SequencePair{Stream: 17, Consumer: 42}, Timestamp: time.Unix(0, 1700000000123456789)}},
		{"12 tokens, no domain", "$JS.ACK._.ACCHASH.PAGEWATCH_JOBS.worker.3.17.42.1700000000123456789.5.r4nd0m",
			jetstream.MsgMetadata{Stream: "PAGEWATCH_JOBS", Consumer: "worker", NumDelivered: 3, NumPending: 5,
				Sequence: jetstream.SequencePair{Stream: 17, Consumer: 42}, Timestamp: time.Unix(0, 1700000000123456789)}},
		{"12 tokens, domain", "$JS.ACK.hub.ACCHASH.S.c.1.2.3.4.0.r4nd0m",
			jetstream.MsgMetadata{Domain: "hub", Stream: "S", Consumer: "c", NumDelivered: 1,
				Sequence: jetstream.SequencePair{Stream: 2, Consumer: 3}, Timestamp: time.Unix(0, 4)}},
		{"11 tokens", "$JS.ACK.hub.ACCHASH.S.c.1.2.3.4.0",
			jetstream.MsgMetadata{Domain: "hub", Stream: "S", Consumer: "c", NumDelivered: 1,
				Sequence: jetstream.SequencePair{Stream: 2, Consumer: 3}, Timestamp: time.Unix(0, 4)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := (&fwdMsg{reply: tc.reply}).Metadata()
			if err != nil {
				t.Fatal(err)
			}
			if !got.Timestamp.Equal(tc.want.Timestamp) {
				t.Errorf("timestamp %v, want %v", got.Timestamp, tc.want.Timestamp)
			}
			got.Timestamp, tc.want.Timestamp = time.Time{}, time.Time{}
			if *got != tc.want {
				t.Errorf("metadata %+v, want %+v", *got, tc.want)
			}
			ref, err := (&nats.Msg{Reply: tc.reply, Sub: &nats.Subscription{}}).Metadata()
			if err != nil {
				t.Fatal(err)
			}
			if ref.Domain != got.Domain || ref.Stream != got.Stream || ref.Consumer != got.Consumer || ref.NumDelivered != got.NumDelivered ||
				ref.NumPending != got.NumPending || ref.Sequence.Stream != got.Sequence.Stream || ref.Sequence.Consumer != got.Sequence.Consumer {
				t.Errorf("metadata %+v, nats.go says %+v", *got, *ref)
			}
		})
	}
	for _, bad := range []string{"", "_INBOX.abc", "$JS.ACK.S.c.1.2.3.4", "$JS.ACK.hub.H.S.c.1.2.3.4", "$JS.API.S.c.1.2.3.4.0.x.y"} {
		if _, err := (&fwdMsg{reply: bad}).Metadata(); !errors.Is(err, jetstream.ErrNotJSMessage) {
			t.Errorf("Metadata of %q: %v, want ErrNotJSMessage", bad, err)
		}
	}
}

// A delivery made to one connection is acked, naked with a delay, kept
// in progress and terminated from another, as the hand-off needs.
func TestFwdMsgAcksFromAnotherConnection(t *testing.T) {
	// Not testenv: it imports sinks/clickhouse, which imports (through
	// the console's port) this package, a cycle for an internal test.
	ns := natstest.Start(t)
	connect := func() *bus.Bus {
		cfg := bus.DefaultConfig()
		cfg.URL = ns.URL
		c, err := bus.Connect(context.Background(), cfg, t.Name(), slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	b, other := connect(), connect().Conn
	ctx := context.Background()
	stream, err := b.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := stream.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	fetch := func(wait time.Duration) jetstream.Msg {
		t.Helper()
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(wait))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			return m
		}
		return nil
	}
	forward := func(m jetstream.Msg) *fwdMsg {
		return &fwdMsg{nc: other, subject: m.Subject(), reply: m.Reply(), header: m.Headers(), data: m.Data()}
	}
	pending := func() int {
		t.Helper()
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.NumAckPending
	}
	for _, s := range []string{"t.1", "t.2", "t.3"} {
		if _, err := b.JS.Publish(ctx, s, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}

	// t.1: progress, a delayed nak, then the redelivery acked.
	m := fetch(time.Second)
	f := forward(m)
	want, _ := m.Metadata()
	if got, err := f.Metadata(); err != nil || *got != *want {
		t.Fatalf("metadata %+v (%v), the delivery's %+v", got, err, want)
	}
	if err := f.InProgress(); err != nil {
		t.Fatal(err)
	}
	if err := f.NakWithDelay(time.Second); err != nil {
		t.Fatal(err)
	}
	if err := f.Ack(); !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
		t.Fatalf("ack after nak: %v, want ErrMsgAlreadyAckd", err)
	}
	naked := time.Now()
	// t.2 comes first: t.1 waits out its delay.
	m2 := fetch(time.Second)
	if m2 == nil || m2.Subject() != "t.2" {
		t.Fatalf("after the delayed nak got %v, want t.2", m2)
	}
	if err := forward(m2).TermWithReason("test"); err != nil {
		t.Fatal(err)
	}
	m3 := fetch(time.Second)
	if m3 == nil || m3.Subject() != "t.3" {
		t.Fatalf("got %v, want t.3", m3)
	}
	if err := forward(m3).DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	again := fetch(3 * time.Second)
	if again == nil || again.Subject() != "t.1" {
		t.Fatalf("t.1 not redelivered after its nak: %v", again)
	}
	if waited := time.Since(naked); waited < 800*time.Millisecond {
		t.Fatalf("redelivered after %s, nak asked for 1s", waited)
	}
	if meta, _ := forward(again).Metadata(); meta.NumDelivered != 2 {
		t.Fatalf("redelivery numbered %d, want 2", meta.NumDelivered)
	}
	if err := forward(again).Ack(); err != nil {
		t.Fatal(err)
	}
	other.Flush()
	testcheck.Eventually(t, 2*time.Second, "no delivery pending after ack, term and double ack", func() error {
		if n := pending(); n != 0 {
			return fmt.Errorf("%d still pending", n)
		}
		return nil
	})
	if m := fetch(200 * time.Millisecond); m != nil {
		t.Fatalf("%s delivered again after it was acked or terminated", m.Subject())
	}
}
