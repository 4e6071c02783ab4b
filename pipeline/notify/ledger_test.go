package notify_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/pipeline/notify"
)

// A delivery whose sent-ledger write fails for longer than ack_wait (the
// bucket is gone from the moment of the send until well after) is not
// sent again when its job comes back to the worker that sent it: the
// worker writes the ledger then, and the history says sent once.
func TestSendWhoseLedgerWriteFailedIsNotSentAgain(t *testing.T) {
	b := setup(t)
	cfg := b.cfg
	cfg.AckWait = 2 * cfg.LockTTL // the shortest allowed: the ledger's budget
	bucket := b.bus.BucketName(bus.BucketSent)
	var sends atomic.Int32
	recv := newFake(func(string, int) error {
		if sends.Add(1) == 1 {
			// The ledger is unwritable from now until after the budget.
			if err := b.bus.JS.DeleteKeyValue(context.Background(), bucket); err != nil {
				t.Error(err)
			}
			time.AfterFunc(cfg.AckWait+2*time.Second, func() {
				if _, err := b.bus.KV(context.Background(), bus.BucketSent, 0); err != nil {
					t.Error(err)
				}
			})
		}
		return nil
	})
	b.runWorker(t, cfg, []notify.ReceiverSpec{recv.spec(notify.DefaultReceiver)}, nil)
	x := job(1)
	b.publish(t, x, "")

	testcheck.Eventually(t, 3*cfg.AckWait, "the send recorded as sent", func() error {
		if h := b.outcomes(t); !strings.Contains(h, "sent\t1") {
			return fmt.Errorf("history: %q", h)
		}
		return nil
	})
	time.Sleep(time.Second) // would a second send follow?
	if sent, attempts := recv.counts(); sent[x.Key] != 1 || attempts[x.Key] != 1 {
		t.Fatalf("sent %d times in %d attempts, want once", sent[x.Key], attempts[x.Key])
	}
}

// A claim left by another worker (state "sending") keeps the delivery
// from being sent until it is claim_timeout old: its claimer may have
// sent and still be trying to record it. Then it is taken over and sent
// once.
func TestClaimOfAnotherWorkerIsTakenOverAfterClaimTimeout(t *testing.T) {
	b := setup(t)
	cfg := b.cfg
	cfg.AckWait = 2 * cfg.LockTTL
	cfg.ClaimTimeout = 3 * cfg.AckWait
	x := job(1)
	kv, err := b.bus.KV(context.Background(), bus.BucketSent, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The claim is as old as ack_wait: past it, but not past claim_timeout.
	claimedAt := time.Now().Add(-cfg.AckWait)
	claim := fmt.Sprintf(`{"at":%q,"worker":"w-gone","state":"sending"}`, claimedAt.UTC().Format(time.RFC3339Nano))
	if _, err := kv.Create(context.Background(), notify.LedgerKey(x.Key, notify.DefaultReceiver), []byte(claim)); err != nil {
		t.Fatal(err)
	}
	var sentAt atomic.Int64
	recv := newFake(func(string, int) error { sentAt.Store(time.Now().UnixNano()); return nil })
	b.runWorker(t, cfg, []notify.ReceiverSpec{recv.spec(notify.DefaultReceiver)}, nil)
	b.publish(t, x, "")

	testcheck.Eventually(t, cfg.ClaimTimeout+cfg.AckWait, "the delivery taken over and sent", func() error {
		if h := b.outcomes(t); !strings.Contains(h, "sent\t1") {
			return fmt.Errorf("history: %q", h)
		}
		return nil
	})
	if at := time.Unix(0, sentAt.Load()); at.Sub(claimedAt) < cfg.ClaimTimeout {
		t.Errorf("sent %s after the claim, before claim_timeout (%s)", at.Sub(claimedAt), cfg.ClaimTimeout)
	}
	time.Sleep(time.Second) // would a second send follow?
	if sent, _ := recv.counts(); sent[x.Key] != 1 {
		t.Fatalf("sent %d times, want once", sent[x.Key])
	}
}
