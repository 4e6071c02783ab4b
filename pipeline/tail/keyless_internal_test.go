package tail

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
	"github.com/pagewatch/pagewatch/pipeline/pageview"
	"github.com/pagewatch/pagewatch/pipeline/visitor"
)

// A line of a day whose salt is not in hand while NATS is down is
// published without a client key, and counted in
// pagewatch_ingest_tail_hits_keyless_total, rather than held: the next
// line of that day tries again, and gets its key once NATS is back.
func TestLinesKeylessWhileNATSIsDown(t *testing.T) {
	ns := natstest.Start(t)
	bcfg := bus.DefaultConfig()
	bcfg.URL = ns.URL
	logger := slog.New(slog.DiscardHandler)
	b, err := bus.Connect(context.Background(), bcfg, "test", logger)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pages, err := pageview.New(pageview.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	combined, err := logformat.Preset("combined")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	batch := newHitBatch(combined, "example.com", lineRules{pages: pages, salts: visitor.NewSalts(b, reg, nil)}, m, logger)
	batch.saltWait = 300 * time.Millisecond
	line := func(day string) []byte {
		return []byte(`203.0.113.7 - - [` + day + `:10:00:00 +0000] "GET /pricing HTTP/1.1" 200 5 "-" "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"`)
	}
	keys := func() []uint64 {
		hits, err := hit.Decode(batch.enc.Bytes(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []uint64
		for _, h := range hits {
			out = append(out, h.Client)
		}
		batch.reset()
		return out
	}

	batch.add(line("27/Nov/2026"), 0)
	if k := keys(); len(k) != 1 || k[0] == visitor.NoKey {
		t.Fatalf("NATS up: keys %v, want one", k)
	}
	ns.Stop()
	batch.add(line("27/Nov/2026"), 100) // the day's salt is in hand
	batch.add(line("28/Nov/2026"), 200) // a new day's is not
	batch.add(line("28/Nov/2026"), 300)
	if k := keys(); len(k) != 3 || k[0] == visitor.NoKey || k[1] != visitor.NoKey || k[2] != visitor.NoKey {
		t.Fatalf("NATS down: keys %v, want the first day's and two without", k)
	}
	if n := testutil.ToFloat64(m.keyless); n != 2 {
		t.Errorf("keyless hits counted %v, want 2", n)
	}
}
