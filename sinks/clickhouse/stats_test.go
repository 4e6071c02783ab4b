package clickhouse_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
)

const hostileReferer = "https://b.example/x\r\n<script>alert(1)</script>\x00'\""

// statsBatches are hits of /pricing around base, with referers, plus hits
// that each window edge or filter must leave out.
func statsBatches(base time.Time) []hit.Batch {
	type h struct {
		at   time.Duration
		path string
		ref  string
	}
	mk := func(seq uint64, hits ...h) hit.Batch {
		b := hit.Batch{Seq: seq}
		for i, x := range hits {
			b.Hits = append(b.Hits, hit.Hit{Time: base.Add(x.at), Site: "example.com", Path: x.path,
				Method: "GET", Status: 200, Referer: x.ref, Offset: uint64(i * 100)})
		}
		return b
	}
	return []hit.Batch{
		mk(1,
			h{0, "/pricing", "https://a.example/"},
			h{10 * time.Second, "/pricing", "https://b.example/"},
			h{70 * time.Second, "/pricing", "https://a.example/"}),
		mk(2,
			h{65 * time.Second, "/pricing", "-"},
			h{125 * time.Second, "/pricing", hostileReferer},
			h{130 * time.Second, "/pricing", ""},
			h{5 * time.Minute, "/pricing", "https://a.example/"}),
		mk(3, h{0, "/other", "https://a.example/"}),                  // another page
		mk(4, h{-time.Minute, "/pricing", "https://c.example/"}),     // before the window
		mk(5, h{10 * time.Minute, "/pricing", "https://c.example/"}), // at its end: excluded
	}
}

// insertTwice loads the batches twice, as after a loader crash, and then
// the first batch a third time on its own, so the copies sit in different
// blocks and parts.
func insertTwice(t *testing.T, c *clickhouse.Client, batches []hit.Batch) {
	t.Helper()
	ctx := context.Background()
	for range 2 {
		if err := c.Hits().InsertHits(ctx, batches); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Hits().InsertHits(ctx, batches[:1]); err != nil {
		t.Fatal(err)
	}
}

func TestPageSeriesIsExactAndOrdered(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	base := time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)
	insertTwice(t, b.client, statsBatches(base))

	got, err := b.client.Traffic().PageSeries(ctx, "example.com", "/pricing", base, base.Add(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want := []traffic.MinuteHits{
		{Minute: base, Hits: 2},
		{Minute: base.Add(time.Minute), Hits: 2},
		{Minute: base.Add(2 * time.Minute), Hits: 2},
		{Minute: base.Add(5 * time.Minute), Hits: 1},
	}
	if !slices.EqualFunc(got, want, func(a, b traffic.MinuteHits) bool { return a.Minute.Equal(b.Minute) && a.Hits == b.Hits }) {
		t.Errorf("PageSeries = %v\nwant %v", got, want)
	}

	// The window's edges: a minute starting at `to` is out, one at `from` in.
	got, err = b.client.Traffic().PageSeries(ctx, "example.com", "/pricing", base.Add(-time.Minute), base.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Hits != 1 || got[1].Hits != 2 || !got[0].Minute.Equal(base.Add(-time.Minute)) {
		t.Errorf("PageSeries of [-1m, 1m) = %v, want 1 hit at -1m and 2 at 0", got)
	}

	if got, err := b.client.Traffic().PageSeries(ctx, "example.com", "/nothing", base, base.Add(time.Hour)); err != nil || len(got) != 0 {
		t.Errorf("PageSeries of an unseen page = %v, %v; want nothing", got, err)
	}
}

func TestTopReferrersIsExactAndOrdered(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	base := time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)
	insertTwice(t, b.client, statsBatches(base))
	from, to := base, base.Add(10*time.Minute)

	got, err := b.client.Traffic().TopReferrers(ctx, "example.com", "/pricing", from, to, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []traffic.Referrer{
		{Referer: "https://a.example/", Hits: 3},
		{Referer: "https://b.example/", Hits: 1},
		{Referer: hostileReferer, Hits: 1}, // stored and returned as logged
	}
	if !slices.Equal(got, want) {
		t.Errorf("TopReferrers = %+v\nwant %+v", got, want)
	}

	got, err = b.client.Traffic().TopReferrers(ctx, "example.com", "/pricing", from, to, 2)
	if err != nil || !slices.Equal(got, want[:2]) {
		t.Errorf("TopReferrers limit 2 = %+v, %v; want %+v", got, err, want[:2])
	}
	if got, err := b.client.Traffic().TopReferrers(ctx, "example.com", "/pricing", from, to, 0); err != nil || got != nil {
		t.Errorf("TopReferrers limit 0 = %+v, %v; want nothing", got, err)
	}

	// A minute earlier takes in the hit from c.example at -1m.
	got, err = b.client.Traffic().TopReferrers(ctx, "example.com", "/pricing", from.Add(-time.Minute), to, 10)
	if err != nil || len(got) != 4 || !slices.Contains(got, traffic.Referrer{Referer: "https://c.example/", Hits: 1}) {
		t.Errorf("TopReferrers from -1m = %+v, %v; want c.example counted once", got, err)
	}

	// After merges the copies are gone and the answer is the same.
	b.server.Query(t, "OPTIMIZE TABLE pw_test.hits FINAL")
	got, err = b.client.Traffic().TopReferrers(ctx, "example.com", "/pricing", from, to, 10)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("TopReferrers after OPTIMIZE = %+v, %v\nwant %+v", got, err, want)
	}
}
