package clickhouse_test

import (
	"context"
	"slices"
	"testing"
	"time"

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
