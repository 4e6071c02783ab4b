package clickhouse_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/schema"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
)

type bundle struct {
	server *clickhousetest.Server
	client *clickhouse.Client
	cfg    clickhouse.Config
}

func setup(t testing.TB) *bundle {
	t.Helper()
	srv := clickhousetest.Start(t)
	cfg := clickhouse.DefaultConfig()
	cfg.Addr = []string{srv.Addr}
	cfg.Database = "pw_test"
	c, err := clickhouse.Open(context.Background(), cfg, slog.New(slog.NewTextHandler(t.Output(), nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &bundle{server: srv, client: c, cfg: cfg}
}

func TestMigrateIsIdempotent(t *testing.T) {
	b := setup(t)
	n, err := b.client.Migrate(context.Background())
	if err != nil || n != 0 {
		t.Fatalf("second migrate applied %d, err %v", n, err)
	}
	ms, err := schema.Migrations(schema.Layout{})
	if err != nil {
		t.Fatal(err)
	}
	got := b.server.Query(t, "SELECT count() FROM pw_test.schema_migrations FINAL")
	if got != fmt.Sprintf("%d\n", len(ms)) {
		t.Fatalf("schema_migrations rows: %q", got)
	}
}

func batchesAt(base time.Time) []hit.Batch {
	mk := func(seq uint64, n int, path string, at time.Time) hit.Batch {
		b := hit.Batch{Seq: seq}
		for i := 0; i < n; i++ {
			b.Hits = append(b.Hits, hit.Hit{Time: at.Add(time.Duration(i) * time.Second), Site: "example.com", Path: path, Method: "GET", Status: 200, Offset: uint64(i * 100)})
		}
		return b
	}
	return []hit.Batch{
		mk(1, 90, "/pricing", base),
		mk(2, 30, "/pricing", base.Add(-48*time.Hour)), // another day: another partition
		mk(3, 5, "/blog/\x00'\"", base),
	}
}

func TestInsertTwiceCountsOnce(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Minute)
	batches := batchesAt(now.Add(-10 * time.Minute))
	for i := 0; i < 3; i++ { // a batch redelivered twice after crashes
		if err := b.client.Hits().InsertHits(ctx, batches); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := b.client.Hits().HitCount(ctx); err != nil || n != 125 {
		t.Fatalf("HitCount = %d, %v; want 125", n, err)
	}
	cases := []struct {
		path  string
		since time.Time
		want  uint64
	}{
		{"/pricing", time.Time{}, 120},
		{"/pricing", now.Add(-time.Hour), 90},
		{"/blog/\x00'\"", time.Time{}, 5},
		{"/nothing", time.Time{}, 0},
	}
	for _, c := range cases {
		got, err := b.client.Hits().PageCount(ctx, "example.com", c.path, c.since)
		if err != nil || got != c.want {
			t.Errorf("PageCount(%q, %v) = %d, %v; want %d", c.path, c.since, got, err, c.want)
		}
	}
}

func TestHistory(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	x := crossing.Crossing{Key: "r.abc.1", Rule: "r", Site: "s", Path: "/p", Window: "1h", Threshold: 10, Count: 11, CrossedAt: time.Now()}
	for i := 0; i < 2; i++ {
		if err := b.client.History().RecordCrossing(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.client.History().RecordNotification(ctx, crossing.Record{At: time.Now(), Crossing: x, Outcome: crossing.Sent, Worker: "w1"}); err != nil {
		t.Fatal(err)
	}
	if got := b.server.Query(t, "SELECT count() FROM pw_test.crossings FINAL"); got != "1\n" {
		t.Fatalf("crossings: %q", got)
	}
	if got := b.server.Query(t, "SELECT outcome, worker FROM pw_test.notifications"); got != "sent\tw1\n" {
		t.Fatalf("notifications: %q", got)
	}

	// A crossing with a why has it next to it, as JSON; one without has none.
	y := x
	y.Key = "r.abc.2"
	y.Why = &crossing.Why{Kind: "spike", Count: 11, Baseline: 2, Rank: 3, RankOf: 40,
		Referrers: []crossing.ReferrerShare{{Domain: "news.example", Hits: 7, Share: 0.7}}}
	if err := b.client.History().RecordCrossings(ctx, []crossing.Crossing{x, y}); err != nil {
		t.Fatal(err)
	}
	got := b.server.Query(t, "SELECT crossing_key, visitParamExtractString(why, 'kind'), visitParamExtractUInt(why, 'rank') FROM pw_test.crossing_whys FINAL ORDER BY crossing_key")
	if got != "r.abc.2\tspike\t3\n" {
		t.Fatalf("crossing_whys: %q", got)
	}
}

func TestOpenCreatesDatabaseAndReconnectsAfterOutage(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.server.Stop()
	if err := b.client.Hits().InsertHits(ctx, batchesAt(time.Now())); err == nil {
		t.Fatal("insert succeeded with the server down")
	}
	b.server.Restart(t)
	if err := b.client.Hits().InsertHits(ctx, batchesAt(time.Now())); err != nil {
		t.Fatalf("insert after restart: %v", err)
	}
}
