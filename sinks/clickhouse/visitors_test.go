package clickhouse_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
)

// TestVisitorCountsAreExact loads hits of many clients and classes, some
// batches twice, over both insert paths, and checks every visitor count
// against one made in Go: distinct client keys among the counted hits,
// over whole windows and over spans.
func TestVisitorCountsAreExact(t *testing.T) {
	for _, viaHTTP := range []bool{false, true} {
		t.Run(fmt.Sprintf("http=%v", viaHTTP), func(t *testing.T) {
			b := setup(t)
			c := b.client
			if viaHTTP {
				cfg := b.cfg
				cfg.HTTPAddr = []string{b.server.HTTPAddr}
				var err error
				if c, err = clickhouse.Open(context.Background(), cfg, slog.New(slog.NewTextHandler(t.Output(), nil))); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
			}
			checkVisitors(t, c)
		})
	}
}

func checkVisitors(t *testing.T, c *clickhouse.Client) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	end := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	pages := []string{"/a", "/b", "/c"}
	// truth[page] is each counted hit's (unix, client).
	type seen struct {
		unix   int64
		client uint64
	}
	truth := map[string][]seen{}
	var batches []hit.Batch
	for bi := range 40 {
		var hits []hit.Hit
		for i := range 300 {
			h := hit.Hit{
				Time:   end.Add(-time.Duration(rng.IntN(48*3600)) * time.Second),
				Site:   "example.com",
				Path:   pages[rng.IntN(len(pages))],
				Method: "GET", Status: 200,
				Class:  hit.Class(rng.IntN(5)),
				Client: uint64(rng.IntN(400)), // 0: no key
				Offset: uint64(i) * 100,
			}
			h.Uncounted = h.Class == hit.ClassBot || h.Class == hit.ClassAICrawler
			hits = append(hits, h)
			if !h.Uncounted && h.Client != 0 {
				truth[h.Path] = append(truth[h.Path], seen{h.Time.Unix(), h.Client})
			}
		}
		batches = append(batches, hit.Batch{Seq: uint64(bi + 1), Hits: hits})
	}
	insert(t, c, batches)
	insert(t, c, batches[10:20]) // loaded twice: no new visitor

	distinct := func(path string, from, to int64) uint64 {
		set := map[uint64]bool{}
		for _, s := range truth[path] {
			if s.unix >= from && s.unix < to {
				set[s.client] = true
			}
		}
		return uint64(len(set))
	}
	starts := []time.Time{{}, end.Add(-time.Hour), end.Add(-24 * time.Hour), end.Add(time.Hour)}
	got, err := c.Counts().WindowCounts(ctx, traffic.WindowQuery{Measure: traffic.Visitors, Sites: []string{"example.com"}, Starts: starts, End: end})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(pages) {
		t.Fatalf("%d pages, want %d: %+v", len(got), len(pages), got)
	}
	for _, pc := range got {
		for i, s := range starts {
			from := s.Unix()
			if s.IsZero() {
				from = 0
			}
			want := uint64(0)
			if from < end.Unix() {
				want = distinct(pc.Path, from, end.Unix())
			}
			if pc.Counts[i] != want {
				t.Errorf("%s from %v: %d visitors, want %d", pc.Path, s, pc.Counts[i], want)
			}
		}
	}
	spans := []traffic.Span{
		{From: end.Add(-30 * time.Hour), To: end.Add(-29 * time.Hour)},
		{From: end.Add(-6 * time.Hour), To: end.Add(-2 * time.Hour)},
		{From: end.Add(-3 * time.Hour), To: end}, // overlaps the one before
	}
	gotSpans := map[string][]uint64{}
	err = c.Counts().SpanVisitors(ctx, traffic.SpanQuery{Sites: []string{"example.com"}, Paths: []string{"/a", "/b"}, Spans: spans},
		func(site, path string, span int, n uint64) {
			if gotSpans[path] == nil {
				gotSpans[path] = make([]uint64, len(spans))
			}
			gotSpans[path][span] = n
		})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := gotSpans["/c"]; ok {
		t.Error("/c was not asked for")
	}
	for _, p := range []string{"/a", "/b"} {
		for i, sp := range spans {
			if want := distinct(p, sp.From.Unix(), sp.To.Unix()); gotSpans[p][i] != want {
				t.Errorf("%s span %d: %d visitors, want %d", p, i, gotSpans[p][i], want)
			}
		}
	}
	// Views still count the counted hits only, bots left out.
	views, err := c.Counts().WindowCounts(ctx, traffic.WindowQuery{Sites: []string{"example.com"}, Starts: []time.Time{{}}, End: end.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, pc := range views {
		total += pc.Counts[0]
	}
	var want uint64
	for _, b := range batches {
		for _, h := range b.Hits {
			if !h.Uncounted {
				want++
			}
		}
	}
	if total != want {
		t.Errorf("views %d, want %d (the counted hits)", total, want)
	}
}
