package retention

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/testenv"
)

func logger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// metric reads one counter or gauge from a registry.
func metric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		m := f.GetMetric()[0]
		if c := m.GetCounter(); c != nil {
			return c.GetValue()
		}
		return m.GetGauge().GetValue()
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func TestValidateNamesKeys(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if err := (Config{RawHitsDays: 0, Every: time.Hour}).Validate(); err != nil {
		t.Fatalf("0 days (keep forever): %v", err)
	}
	err := Config{RawHitsDays: -1, Every: time.Second}.Validate()
	for _, key := range []string{"ingest.load.retention.raw_hits_days", "ingest.load.retention.every"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("got %v, want it to name %s", err, key)
		}
	}
}

// fakeStore fails its first call and then drops one day per call.
type fakeStore struct {
	mu      sync.Mutex
	cutoffs []time.Time
	calls   chan struct{}
}

func (s *fakeStore) DropHitsBefore(ctx context.Context, cutoff time.Time) ([]string, error) {
	s.mu.Lock()
	s.cutoffs = append(s.cutoffs, cutoff)
	n := len(s.cutoffs)
	s.mu.Unlock()
	defer func() { s.calls <- struct{}{} }()
	if n == 1 {
		return nil, errors.New("server gone")
	}
	return []string{"2024010" + string(rune('0'+n))}, nil
}

func TestRunKeepsGoingAfterErrors(t *testing.T) {
	store := &fakeStore{calls: make(chan struct{}, 10)}
	reg := prometheus.NewRegistry()
	now := time.Date(2024, 3, 31, 10, 0, 0, 0, time.UTC)
	r, err := New(Config{RawHitsDays: 30, Every: time.Hour}, Deps{Store: store, Logger: logger(t), Registry: reg, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	r.every = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	for i := 0; i < 3; i++ { // at start, then at two ticks
		select {
		case <-store.calls:
		case <-time.After(10 * time.Second):
			t.Fatalf("run %d did not happen", i+1)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	store.mu.Lock()
	defer store.mu.Unlock()
	// 30 days kept, today included: 2 March to 31 March.
	want := time.Date(2024, 3, 2, 10, 0, 0, 0, time.UTC)
	for i, c := range store.cutoffs {
		if !c.Equal(want) {
			t.Errorf("cutoff %d: %s, want %s", i, c, want)
		}
	}
	if got := metric(t, reg, "pagewatch_retention_errors_total"); got != 1 {
		t.Errorf("errors_total = %v, want 1", got)
	}
	if got, want := metric(t, reg, "pagewatch_retention_hits_partitions_dropped_total"), float64(len(store.cutoffs)-1); got != want {
		t.Errorf("partitions_dropped_total = %v, want %v", got, want)
	}
	if got := metric(t, reg, "pagewatch_retention_last_success_timestamp_seconds"); got != float64(now.Unix()) {
		t.Errorf("last_success = %v, want %d", got, now.Unix())
	}
}

func TestZeroDaysKeepsEverything(t *testing.T) {
	store := &fakeStore{calls: make(chan struct{}, 10)}
	r, err := New(Config{RawHitsDays: 0, Every: time.Minute}, Deps{Store: store, Logger: logger(t), Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	r.every = time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(store.cutoffs) != 0 {
		t.Fatalf("the store was called %d times", len(store.cutoffs))
	}
}

// On a real 18.16 server, with a fixed clock: ten days of hits, three kept.
func TestRetentionOn1816(t *testing.T) {
	client, srv := testenv.ClickHouse(t, logger(t))
	ctx := context.Background()
	today := time.Date(2024, 3, 2, 15, 30, 0, 0, time.UTC)
	var batches []hit.Batch
	for d := 0; d < 10; d++ {
		day := today.AddDate(0, 0, -d).Truncate(24 * time.Hour)
		b := hit.Batch{Seq: uint64(100 + d)}
		for i := 0; i < 7; i++ { // 7 hits per day, two pages
			b.Hits = append(b.Hits, hit.Hit{
				Time: day.Add(time.Duration(i) * time.Hour), Site: "example.com",
				Path: []string{"/a", "/b"}[i%2], Status: 200, Offset: uint64(i),
			})
		}
		batches = append(batches, b)
	}
	if err := client.Hits().InsertHits(ctx, batches); err != nil {
		t.Fatal(err)
	}
	minutes := srv.Query(t, "SELECT count(), sum(hits) FROM pagewatch.page_minutes")

	reg := prometheus.NewRegistry()
	r, err := New(Config{RawHitsDays: 3, Every: time.Hour}, Deps{Store: client.Hits(), Logger: logger(t), Registry: reg, Now: func() time.Time { return today }})
	if err != nil {
		t.Fatal(err)
	}
	dropped, err := r.RunOnce(ctx)
	want := []string{"20240222", "20240223", "20240224", "20240225", "20240226", "20240227", "20240228"}
	if err != nil || !slices.Equal(dropped, want) {
		t.Fatalf("dropped %v, %v; want %v", dropped, err, want)
	}
	if got := srv.Query(t, "SELECT toYYYYMMDD(ts) AS day, count() FROM pagewatch.hits GROUP BY day ORDER BY day"); got != "20240229\t7\n20240301\t7\n20240302\t7\n" {
		t.Fatalf("hits left per day:\n%s", got)
	}
	if n, err := client.Hits().HitCount(ctx); err != nil || n != 21 {
		t.Fatalf("HitCount = %d, %v; want 21", n, err)
	}
	if got := srv.Query(t, "SELECT count(), sum(hits) FROM pagewatch.page_minutes"); got != minutes || got != "70\t70\n" {
		t.Fatalf("page_minutes: %q, was %q", got, minutes)
	}
	if n, err := client.Hits().PageCount(ctx, "example.com", "/a", time.Time{}); err != nil || n != 40 {
		t.Fatalf("all-time PageCount(/a) = %d, %v; want 40", n, err)
	}
	if got := metric(t, reg, "pagewatch_retention_hits_partitions_dropped_total"); got != 7 {
		t.Errorf("partitions_dropped_total = %v, want 7", got)
	}

	// A second loader running at the same moment finds nothing left.
	if dropped, err := r.RunOnce(ctx); err != nil || len(dropped) != 0 {
		t.Fatalf("second run: %v, %v", dropped, err)
	}
}

// countingStore counts its calls and fails while fail is set.
type countingStore struct {
	mu    sync.Mutex
	calls int
	fail  bool
}

func (s *countingStore) DropHitsBefore(context.Context, time.Time) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.fail {
		return nil, errors.New("shard down")
	}
	return nil, nil
}

// TestTwoLoadersClaimEachPeriodOnce: two runners sharing a claims bucket
// in NATS KV drop old days once per period between them; a failed run
// gives its period back, so the other runner retries it.
func TestTwoLoadersClaimEachPeriodOnce(t *testing.T) {
	b, _ := testenv.NATS(t, logger(t))
	ctx := context.Background()
	claims, err := b.KV(ctx, "retention_test", ClaimsTTL)
	if err != nil {
		t.Fatal(err)
	}
	store := &countingStore{}
	now := time.Date(2024, 3, 31, 10, 5, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	var runners []*Runner
	var regs []*prometheus.Registry
	for _, owner := range []string{"loader-1", "loader-2"} {
		reg := prometheus.NewRegistry()
		r, err := New(Config{RawHitsDays: 30, Every: time.Hour}, Deps{Store: store, Claims: claims, Owner: owner, Logger: logger(t), Registry: reg, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		runners, regs = append(runners, r), append(regs, reg)
	}
	runAll := func() {
		t.Helper()
		for _, r := range runners {
			_, _ = r.RunOnce(ctx)
		}
	}
	runAll()
	runAll() // both tick again within the same hour
	if store.calls != 1 {
		t.Fatalf("the store was called %d times in one period by two loaders, want 1", store.calls)
	}
	if got := metric(t, regs[1], "pagewatch_retention_claimed_elsewhere_total"); got != 2 {
		t.Errorf("loader 2 claimed_elsewhere_total = %v, want 2", got)
	}

	now = now.Add(time.Hour) // the next period: one more run
	runAll()
	if store.calls != 2 {
		t.Fatalf("store calls after the second period: %d, want 2", store.calls)
	}

	now = now.Add(time.Hour)
	store.fail = true
	_, err = runners[0].RunOnce(ctx) // claims the period and fails
	if err == nil {
		t.Fatal("a failed drop was not reported")
	}
	store.fail = false
	if _, err := runners[1].RunOnce(ctx); err != nil { // retries the period
		t.Fatal(err)
	}
	runAll() // done: nobody runs it again
	if store.calls != 4 {
		t.Fatalf("store calls after a failed period retried: %d, want 4", store.calls)
	}
}
