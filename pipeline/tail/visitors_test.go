package tail_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/pipeline/tail"
	"github.com/pagewatch/pagewatch/pipeline/visitor"
)

// Two tailers, each with its own NATS connection as two hosts would
// have, follow their own files while lines cross midnight UTC. Each
// line is keyed with the salt of its own day: the same client (address
// and user agent) gets the same key on both tailers within a day and
// another key the next day, other clients get other keys, and the
// bucket holds one salt per day, made by whichever tailer came first.
func TestClientKeysAgreeAcrossTailersAndChangeAtMidnight(t *testing.T) {
	b := setup(t)
	const (
		firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
		chrome  = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	)
	clients := []struct{ addr, ua string }{{"203.0.113.7", firefox}, {"198.51.100.9", firefox}, {"203.0.113.7", chrome}}
	times := []string{"27/Nov/2026:23:59:58 +0000", "28/Nov/2026:00:00:02 +0000"}
	start := func(name string) {
		cfg := bus.DefaultConfig()
		cfg.URL = b.nats.URL
		conn, err := bus.Connect(context.Background(), cfg, name, b.logger)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(conn.Close)
		tc := b.cfg
		tc.Instance = name
		tc.Inputs = []tail.Input{{Path: filepath.Join(b.dir, name+".log"), Site: "example.com"}}
		tl, err := tail.New(tc, tail.Deps{Bus: conn, Logger: b.logger, Registry: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		if err := tl.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- tl.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("tailer %s: %v", name, err)
			}
		})
		var lines [][]byte
		for _, ts := range times {
			for ci, c := range clients {
				lines = append(lines, fmt.Appendf(nil, `%s - - [%s] "GET /%s/%d HTTP/1.1" 200 5 "-" "%s"`, c.addr, ts, name, ci, c.ua))
			}
		}
		appendLines(t, tc.Inputs[0].Path, lines)
	}
	start("a")
	start("b")
	hits := b.waitHits(t, 2*len(times)*len(clients))

	// key[day][client] as each tailer made it.
	type who struct {
		day    int
		client string
	}
	keys := map[who]map[uint64]bool{}
	for _, h := range hits {
		if h.Client == visitor.NoKey {
			t.Fatalf("hit without a client key: %+v", h)
		}
		var tailer string
		var ci int
		if _, err := fmt.Sscanf(h.Path, "/%1s/%d", &tailer, &ci); err != nil {
			t.Fatalf("path %q: %v", h.Path, err)
		}
		day := h.Time.Day()
		w := who{day, fmt.Sprint(ci)}
		if keys[w] == nil {
			keys[w] = map[uint64]bool{}
		}
		keys[w][h.Client] = true
		if h.Class != hit.ClassHuman {
			t.Errorf("%s: class %s, want human", h.Path, h.Class)
		}
	}
	all := map[uint64]who{}
	for w, ks := range keys {
		if len(ks) != 1 {
			t.Errorf("client %s on day %d: %d keys across the tailers, want 1", w.client, w.day, len(ks))
		}
		for k := range ks {
			if other, ok := all[k]; ok {
				t.Errorf("client %s on day %d has the key of client %s on day %d", w.client, w.day, other.client, other.day)
			}
			all[k] = w
		}
	}
	if len(keys) != len(times)*len(clients) {
		t.Fatalf("%d (day, client) pairs, want %d", len(keys), len(times)*len(clients))
	}
	kv, err := b.bus.JS.KeyValue(context.Background(), b.bus.BucketName(visitor.Bucket))
	if err != nil {
		t.Fatal(err)
	}
	names, err := kv.ListKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var days []string
	for k := range names.Keys() {
		days = append(days, k)
	}
	if len(days) != 2 {
		t.Fatalf("salts for %v, want one for each of the two days", days)
	}
}
