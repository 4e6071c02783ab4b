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
	cfg.AckWait = 2 * cfg.LockTTL                               // the shortest allowed: the ledger's budget
	bucket := bus.DefaultConfig().Prefix + "_" + bus.BucketSent // as setup connects
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
