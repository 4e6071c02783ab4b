package load_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/testcheck"
)

// An undecodable message goes to the dead-letter stream with its reason
// and where it came from; the hits around it are all loaded.
func TestUndecodableMessageIsDeadLettered(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.publish(t, 10, 100)
	junk := nats.NewMsg(b.bus.HitsSubject("test", "junk"))
	junk.Data = []byte("\x16\x03\x01 not a hit batch")
	ack, err := b.bus.JS.PublishMsg(ctx, junk)
	if err != nil {
		t.Fatal(err)
	}
	b.publish(t, 10, 100)
	defer b.run(t, b.ch.Hits())()
	b.waitCount(t, 2000)

	dead, err := b.bus.JS.Stream(ctx, b.bus.DeadLetterStreamName())
	if err != nil {
		t.Fatal(err)
	}
	var m *jetstream.RawStreamMsg
	testcheck.Eventually(t, 10*time.Second, "the junk message dead-lettered", func() bool {
		m, _ = dead.GetLastMsgForSubject(ctx, b.bus.DeadLetterSubject("hits"))
		return m != nil
	})
	if string(m.Data) != string(junk.Data) {
		t.Fatalf("dead letter data %q", m.Data)
	}
	if got := m.Header.Get(bus.HeaderDeadSubject); got != junk.Subject {
		t.Fatalf("dead letter subject header %q, want %q", got, junk.Subject)
	}
	if got, want := m.Header.Get(bus.HeaderDeadSeq), ack.Sequence; got != strconv.FormatUint(want, 10) {
		t.Fatalf("dead letter sequence header %q, want %d", got, want)
	}
	if reason := m.Header.Get(bus.HeaderDeadReason); reason == "" {
		t.Fatal("dead letter without a reason")
	} else {
		t.Logf("reason: %s", reason)
	}
	info, err := dead.Info(ctx)
	if err != nil || info.State.Msgs != 1 {
		t.Fatalf("dead-letter stream holds %d messages (%v), want 1", info.State.Msgs, err)
	}
	// Terminated, so never delivered again.
	cons, err := b.bus.JS.Consumer(ctx, b.bus.HitsStreamName(), b.cfg.Consumer)
	if err != nil {
		t.Fatal(err)
	}
	testcheck.Eventually(t, 10*time.Second, "the consumer to have nothing pending", func() error {
		ci, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ci.NumAckPending != 0 || ci.NumPending != 0 {
			return fmt.Errorf("consumer still has %d pending, %d unacked", ci.NumPending, ci.NumAckPending)
		}
		return nil
	})
}
