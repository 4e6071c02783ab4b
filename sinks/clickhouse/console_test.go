package clickhouse_test

import (
	"context"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/console"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
)

// The console's reads against a real server: counts exact with batches
// loaded three times, filters and paging of the history, actions kept
// beside the crossing they are about.
func TestConsoleStore(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	// Yesterday noon, not the wall clock: the day totals below count the
	// hits of sealed days, and a run in the first minutes after midnight
	// would seal the "recent" hits with the old ones.
	now := time.Now().UTC().Truncate(24 * time.Hour).Add(-12*time.Hour + 17*time.Second)
	base := now.Truncate(time.Minute).Add(-10 * time.Minute)
	batches := batchesAt(base)
	for i := 0; i < 3; i++ {
		if err := b.client.Hits().InsertHits(ctx, batches); err != nil {
			t.Fatal(err)
		}
	}
	// 90 hits of /pricing one a second from base: all in the last hour,
	// none in the last 5 minutes.
	live, err := b.client.Traffic().Live(ctx, console.LiveQuery{Now: now, PerSite: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 2 || live[0].Path != "/pricing" || live[0].Views1h != 90 || live[0].Views5m != 0 || live[1].Views1h != 5 {
		t.Fatalf("live: %+v", live)
	}
	var sum uint64
	for _, m := range live[0].Minutes {
		sum += m
	}
	if sum != 90 || len(live[0].Minutes) != 60 {
		t.Errorf("live minutes sum to %d over %d minutes, want 90 over 60", sum, len(live[0].Minutes))
	}
	if other, err := b.client.Traffic().Live(ctx, console.LiveQuery{Site: "other.example", Now: now, PerSite: 10}); err != nil || len(other) != 0 {
		t.Errorf("live of another site: %+v, %v", other, err)
	}
	// Sites made up by clients' Host headers do not grow the answer past
	// its overall bound: the busiest pages stay.
	clickhouse.SetMaxLivePages(b.client, 1)
	if top, err := b.client.Traffic().Live(ctx, console.LiveQuery{Now: now, PerSite: 10}); err != nil || len(top) != 1 || top[0].Path != "/pricing" {
		t.Errorf("live bounded to 1 page: %+v, %v; want /pricing alone", top, err)
	}
	counts, err := b.client.Traffic().PageCounts(ctx, []string{"example.com", "o'ther"}, []string{"/pricing", "/nope"}, now.Add(-72*time.Hour), now.Add(time.Minute))
	if err != nil || len(counts) != 1 || counts[0].Views != 120 {
		t.Errorf("page counts: %+v, %v; want /pricing's 120", counts, err)
	}
	// Once the day two days ago is sealed, its views come from page_days:
	// the same count.
	if _, err := b.client.Counts().SealDays(ctx, now.Truncate(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, span := range []time.Duration{72 * time.Hour, 7 * 24 * time.Hour} {
		counts, err = b.client.Traffic().PageCounts(ctx, []string{"example.com"}, []string{"/pricing"}, now.Add(-span), now.Add(time.Minute))
		if err != nil || len(counts) != 1 || counts[0].Views != 120 {
			t.Errorf("page counts over %s, sealed: %+v, %v; want 120", span, counts, err)
		}
	}
	counts, err = b.client.Traffic().PageCounts(ctx, []string{"example.com"}, []string{"/pricing"}, now.Add(-36*time.Hour), now.Add(time.Minute))
	if err != nil || len(counts) != 1 || counts[0].Views != 90 {
		t.Errorf("page counts over 36h: %+v, %v; want 90", counts, err)
	}
	top, err := b.client.Traffic().TopPages(ctx, "example.com", now.Add(-time.Hour), now, 1)
	if err != nil || len(top) != 1 || top[0].Views != 90 {
		t.Errorf("top pages: %+v, %v", top, err)
	}
	hours, err := b.client.Traffic().PageHourSeries(ctx, "example.com", "/pricing", now.Add(-72*time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, h := range hours {
		total += h.Hits
	}
	if total != 120 {
		t.Errorf("hourly series sums to %d, want 120 (90 now, 30 two days ago)", total)
	}
	f, err := b.client.Traffic().Freshness(ctx)
	if err != nil || f.LastHit.Before(base) {
		t.Errorf("freshness %+v, %v", f, err)
	}

	at := now.Truncate(time.Second)
	xs := []crossing.Crossing{
		{Key: "pricing.a.1", Rule: "pricing", Site: "example.com", Path: "/pricing", Window: "1h", Threshold: 50, Count: 90, CrossedAt: at.Add(-time.Minute)},
		{Key: "blog.b.1", Rule: "blog", Site: "example.com", Path: "/blog/\x00'\"", Window: "1h", Threshold: 1, Count: 5, CrossedAt: at.Add(-2 * time.Minute)},
	}
	for i := 0; i < 2; i++ {
		if err := b.client.History().RecordCrossings(ctx, xs); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.client.History().RecordNotification(ctx, crossing.Record{At: at, Crossing: xs[0], Outcome: crossing.DeadLettered, SMTPCode: 550, Error: "mailbox unavailable", Worker: "w1"}); err != nil {
		t.Fatal(err)
	}
	q := console.HistoryQuery{From: at.Add(-time.Hour), To: at.Add(time.Minute), Limit: 10}
	got, err := b.client.History().Crossings(ctx, q)
	if err != nil || len(got) != 2 || got[0].Key != "pricing.a.1" || got[0].Count != 90 {
		t.Fatalf("crossings: %+v, %v", got, err)
	}
	for name, f := range map[string]console.HistoryQuery{
		"rule":    {Rule: "blog"},
		"path":    {Path: "/blog/\x00'\""},
		"outcome": {Outcome: "dead_lettered"},
		"offset":  {Offset: 1},
	} {
		f.From, f.To, f.Limit = q.From, q.To, 10
		got, err := b.client.History().Crossings(ctx, f)
		want := "blog.b.1"
		if name == "outcome" {
			want = "pricing.a.1"
		}
		if err != nil || len(got) != 1 || got[0].Key != want {
			t.Errorf("%s filter: %+v, %v; want only %s", name, got, err, want)
		}
	}
	if err := b.client.History().RecordAction(ctx, console.Action{At: at, User: "alice", Action: "retry", Kind: "jobs", Seq: 7,
		Key: "pricing.a.1", Rule: "pricing", Site: "example.com", Path: "/pricing", Receiver: "email", Reason: "mailbox unavailable"}); err != nil {
		t.Fatal(err)
	}
	if err := b.client.History().RecordAction(ctx, console.Action{At: at, User: "bob", Action: "discard", Kind: "hits", Seq: 9, Reason: "bad magic"}); err != nil {
		t.Fatal(err)
	}
	outs, err := b.client.History().Outcomes(ctx, []string{"pricing.a.1"})
	if err != nil || len(outs) != 2 || outs[0].Outcome != "dead_lettered" || outs[0].SMTPCode != 550 || outs[1].Outcome != "retried" || outs[1].Worker != "console:alice" {
		t.Errorf("outcomes: %+v, %v", outs, err)
	}
	acts, err := b.client.History().Actions(ctx, at.Add(-time.Hour), 10)
	if err != nil || len(acts) != 2 {
		t.Fatalf("actions: %+v, %v", acts, err)
	}
	for _, a := range acts {
		if (a.User == "alice" && (a.Action != "retry" || a.Key != "pricing.a.1" || a.Kind != "jobs" || a.Receiver != "email" || a.Reason != "mailbox unavailable")) ||
			(a.User == "bob" && (a.Action != "discard" || a.Kind != "hits" || a.Seq != 9 || a.Key != "" || a.Receiver != "" || a.Reason != "bad magic")) {
			t.Errorf("action %+v", a)
		}
	}
	last, err := b.client.History().LastFired(ctx, []string{"pricing"}, at.Add(-time.Hour))
	if err != nil || len(last) != 1 || !last[0].CrossedAt.Equal(xs[0].CrossedAt) {
		t.Errorf("last fired: %+v, %v", last, err)
	}
	days, err := b.client.Traffic().DayTotals(ctx, []string{"example.com"}, []string{"/pricing", "/other"}, now.Add(-7*24*time.Hour), now)
	if err != nil || len(days) != 1 || days[0].Hits != 30 || days[0].Path != "/pricing" {
		t.Errorf("day totals: %+v, %v; want the 30 hits two days ago", days, err)
	}
}
