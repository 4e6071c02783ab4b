package console_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/console"
	"github.com/pagewatch/pagewatch/internal/testenv"
	"github.com/pagewatch/pagewatch/pipeline/sweep/pagestate"
)

// sweeperStates is the console's reader of the sweeper's states over a
// real NATS (in-process), holding the given states of pages of
// example.com, written as the sweep writes them (pagestate's key and
// shape): what the browser tests show of a rule's open episode or held
// surge comes through the same reader as in production.
func sweeperStates(t *testing.T, states map[[2]string]pagestate.State) *console.NATS {
	t.Helper()
	ctx := context.Background()
	b, _ := testenv.NATS(t, testenv.Logger(t))
	kv, err := b.KV(ctx, bus.BucketSweeps, 0)
	if err != nil {
		t.Fatal(err)
	}
	for rp, st := range states {
		data, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(ctx, pagestate.Key(rp[0], "example.com", rp[1], false), data); err != nil {
			t.Fatal(err)
		}
	}
	return console.NewNATS(b)
}
