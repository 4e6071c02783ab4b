package bus_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
)

// LeaderGet agrees with the bucket on a value, a key never written, and a
// deleted and a purged key.
func TestLeaderGet(t *testing.T) {
	ns := natstest.Start(t)
	cfg := bus.DefaultConfig()
	cfg.URL = ns.URL
	b, err := bus.Connect(context.Background(), cfg, t.Name(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	ctx := context.Background()
	kv, err := b.KV(ctx, bus.BucketSent, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a.b", "gone", "purged"} {
		if _, err := kv.Put(ctx, k, []byte("v-"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := kv.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, "purged"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key   string
		want  string
		found bool
	}{{"a.b", "v-a.b", true}, {"never", "", false}, {"gone", "", false}, {"purged", "", false}} {
		v, rev, found, err := b.LeaderGet(ctx, bus.BucketSent, c.key)
		if err != nil || found != c.found || string(v) != c.want {
			t.Errorf("LeaderGet(%q) = %q, %v, %v; want %q, %v", c.key, v, found, err, c.want, c.found)
		}
		if found {
			e, err := kv.Get(ctx, c.key)
			if err != nil || e.Revision() != rev {
				t.Errorf("LeaderGet(%q): revision %d, the bucket's %v (%v)", c.key, rev, e, err)
			}
		}
	}
}
