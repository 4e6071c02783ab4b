package clickhouse_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

func TestExplainRanksFindsBusiestMinuteAndReferrerDomains(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	base := time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)
	insertTwice(t, b.client, statsBatches(base))
	q := traffic.ExplainQuery{Site: "example.com", Path: "/pricing", From: base, To: base.Add(10 * time.Minute),
		Count: 7, Rank: true, BaselineFrom: base.Add(-time.Hour), Domains: 10}

	check := func(when string) {
		t.Helper()
		got, err := b.client.Traffic().Explain(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if got.Rank != 1 || got.RankOf != 2 {
			t.Errorf("%s: rank %d of %d, want 1 of 2 (/pricing 7 views, /other 1)", when, got.Rank, got.RankOf)
		}
		// Three minutes have 2 views each: the earliest is the busiest.
		if !got.BusiestMinute.Equal(base) || got.BusiestHits != 2 {
			t.Errorf("%s: busiest minute %v with %d, want %v with 2", when, got.BusiestMinute, got.BusiestHits, base)
		}
		// The hostile referer's host is b.example; "-" and "" have none.
		want := []traffic.DomainHits{{Domain: "a.example", Window: 3}, {Domain: "b.example", Window: 2}}
		if !slices.Equal(got.Domains, want) || got.WindowHits != 5 || got.BaselineHits != 1 {
			t.Errorf("%s: domains %+v (window %d, baseline %d)\nwant %+v (window 5, baseline 1: c.example at -1m)",
				when, got.Domains, got.WindowHits, got.BaselineHits, want)
		}
	}
	check("before merges")
	b.server.Query(t, "OPTIMIZE TABLE pw_test.hits FINAL")
	b.server.Query(t, "OPTIMIZE TABLE pw_test.page_minutes FINAL")
	check("after merges")

	// A page ranked by a smaller count: every page with more is ahead.
	q.Count, q.Path = 1, "/other"
	got, err := b.client.Traffic().Explain(ctx, q)
	if err != nil || got.Rank != 2 || got.RankOf != 2 {
		t.Errorf("rank of /other = %d of %d, %v; want 2 of 2", got.Rank, got.RankOf, err)
	}
	// No referrers asked for: none read.
	q.BaselineFrom = time.Time{}
	if got, err := b.client.Traffic().Explain(ctx, q); err != nil || got.Domains != nil || got.WindowHits != 0 {
		t.Errorf("Explain without a baseline period = %+v, %v; want no referrers", got, err)
	}
}

// The clients part counts each hit once when its batch was loaded twice,
// before and after merges: views and keyed views, distinct visitors, the
// busiest client's views and every class's hits, counted or not.
func TestExplainClientsIsExactWhenLoadedTwice(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	base := time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)
	var batches []hit.Batch
	add := func(seq uint64, at time.Time, n int, class hit.Class, uncounted bool, client func(i int) uint64) {
		bt := hit.Batch{Seq: seq}
		for i := range n {
			bt.Hits = append(bt.Hits, hit.Hit{Time: at.Add(time.Duration(i) * time.Second), Site: "example.com", Path: "/pricing",
				Class: class, Uncounted: uncounted, Client: client(i), Offset: uint64(i)})
		}
		batches = append(batches, bt)
	}
	// One scraper (client 7) sends 50 views over two batches, 3 people 1
	// each, a crawler 20 uncounted hits, and a tailer without keys 4
	// unknown views; another page's and another hour's hits are not in it.
	add(1, base, 30, hit.ClassHuman, false, func(int) uint64 { return 7 })
	add(2, base.Add(3*time.Minute), 20, hit.ClassHuman, false, func(int) uint64 { return 7 })
	add(3, base.Add(4*time.Minute), 3, hit.ClassHuman, false, func(i int) uint64 { return uint64(100 + i) })
	add(4, base.Add(5*time.Minute), 20, hit.ClassBot, true, func(i int) uint64 { return uint64(200 + i%2) })
	add(5, base.Add(6*time.Minute), 4, hit.ClassUnknown, false, func(int) uint64 { return 0 })
	add(6, base.Add(2*time.Hour), 9, hit.ClassHuman, false, func(i int) uint64 { return uint64(i) + 1 })
	insertTwice(t, b.client, batches)

	q := traffic.ExplainQuery{Site: "example.com", Path: "/pricing", From: base, To: base.Add(time.Hour), Clients: true}
	want := traffic.Clients{Views: 57, Keyed: 53, Visitors: 4, TopViews: 50, Classes: []traffic.ClassHits{
		{Class: "human", Hits: 53, Counted: true}, {Class: "bot", Hits: 20}, {Class: "unknown", Hits: 4, Counted: true}}}
	check := func(when string) {
		t.Helper()
		got, err := b.client.Traffic().Explain(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if got.Clients == nil {
			t.Fatalf("%s: no clients", when)
		}
		c := *got.Clients
		if c.Views != want.Views || c.Keyed != want.Keyed || c.Visitors != want.Visitors || c.TopViews != want.TopViews || !slices.Equal(c.Classes, want.Classes) {
			t.Errorf("%s: clients %+v\nwant %+v", when, c, want)
		}
		if s := got.Clients.TopShare(); s < 0.94 || s > 0.95 {
			t.Errorf("%s: top share %v, want 50/53", when, s)
		}
	}
	check("before merges")
	b.server.Query(t, "OPTIMIZE TABLE pw_test.page_clients FINAL")
	check("after merges")

	// A window with nothing in page_clients has no clients part, and one
	// not asked for neither.
	q.From, q.To = base.Add(-2*time.Hour), base.Add(-time.Hour)
	if got, err := b.client.Traffic().Explain(ctx, q); err != nil || got.Clients != nil {
		t.Errorf("clients of an empty window = %+v, %v; want nil", got.Clients, err)
	}
	q.From, q.To, q.Clients = base, base.Add(time.Hour), false
	if got, err := b.client.Traffic().Explain(ctx, q); err != nil || got.Clients != nil {
		t.Errorf("clients not asked for = %+v, %v; want nil", got.Clients, err)
	}
}
