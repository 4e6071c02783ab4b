package sweep

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/internal/testenv"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/pipeline/bus"
	"github.com/pagewatch/pagewatch/pipeline/crossing"
	"github.com/pagewatch/pagewatch/pipeline/hit"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
)

type bundle struct {
	bus    *bus.Bus
	ch     *clickhouse.Client
	chSrv  *clickhousetest.Server
	cfg    Config
	logger *slog.Logger
	seq    uint64
}

func setup(t *testing.T) *bundle {
	t.Helper()
	logger := testenv.Logger(t)
	b, _ := testenv.NATS(t, logger)
	c, srv := testenv.ClickHouse(t, logger)
	cfg := DefaultConfig()
	cfg.Rules = []Rule{
		{Name: "hourly", Site: "example.com", Path: "/pricing", Threshold: 100, Window: "1h", Recipients: []string{"ops@example.com"}},
		{Name: "milestone", Site: "example.com", Path: "/pricing", Threshold: 150, Window: "all", Recipients: []string{"ops@example.com"}},
	}
	return &bundle{bus: b, ch: c, chSrv: srv, cfg: cfg, logger: logger}
}

func (b *bundle) sweeper(t *testing.T, now func() time.Time) *Sweeper {
	t.Helper()
	s, err := New(context.Background(), b.cfg, b.bus, b.ch, b.ch, b.logger, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if now != nil {
		s.now = now
	}
	return s
}

func (b *bundle) addHits(t *testing.T, n int, at time.Time) {
	t.Helper()
	b.seq++
	batch := hit.Batch{Seq: b.seq}
	for i := 0; i < n; i++ {
		batch.Hits = append(batch.Hits, hit.Hit{Time: at, Site: "example.com", Path: "/pricing", Offset: uint64(i)})
	}
	if err := b.ch.InsertHits(context.Background(), []hit.Batch{batch}); err != nil {
		t.Fatal(err)
	}
}

// jobs returns the crossings waiting in the work queue.
func (b *bundle) jobs(t *testing.T) []crossing.Crossing {
	t.Helper()
	ctx := context.Background()
	s, err := b.bus.JS.Stream(ctx, b.bus.JobsStreamName())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []crossing.Crossing
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		x, err := crossing.Unmarshal(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, x)
	}
	return out
}

func (b *bundle) sweep(t *testing.T, s *Sweeper) {
	t.Helper()
	if err := s.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestRollingRuleFiresOnRisingEdgeAndRearms(t *testing.T) {
	b := setup(t)
	b.cfg.Rules = b.cfg.Rules[:1]
	now := time.Now().UTC()
	clock := now
	s := b.sweeper(t, func() time.Time { return clock })

	b.addHits(t, 100, now.Add(-10*time.Minute))
	b.sweep(t, s)
	if n := len(b.jobs(t)); n != 0 {
		t.Fatalf("100 hits is not more than 100, got %d jobs", n)
	}
	b.addHits(t, 1, now.Add(-5*time.Minute))
	b.sweep(t, s)
	b.sweep(t, s) // still above: no second job
	jobs := b.jobs(t)
	if len(jobs) != 1 || jobs[0].Count != 101 || jobs[0].Window != "1h" {
		t.Fatalf("jobs after crossing: %+v", jobs)
	}
	// An hour later the window is empty: the rule re-arms, then fires again.
	clock = now.Add(time.Hour)
	b.sweep(t, s)
	b.addHits(t, 150, clock.Add(-time.Minute))
	b.sweep(t, s)
	jobs = b.jobs(t)
	if len(jobs) != 2 || jobs[0].Key == jobs[1].Key {
		t.Fatalf("want a second crossing with a new key, got %+v", jobs)
	}
}

func TestAllTimeMilestoneFiresOnce(t *testing.T) {
	b := setup(t)
	b.cfg.Rules = b.cfg.Rules[1:]
	s := b.sweeper(t, nil)
	b.addHits(t, 200, time.Now().Add(-48*time.Hour))
	for i := 0; i < 3; i++ {
		b.sweep(t, s)
	}
	if jobs := b.jobs(t); len(jobs) != 1 || jobs[0].Window != "all time" {
		t.Fatalf("jobs: %+v", jobs)
	}
	if got := b.chSrv.Query(t, "SELECT count() FROM pagewatch.crossings FINAL"); got != "1\n" {
		t.Fatalf("crossings history rows = %q, want 1", got)
	}
}

func TestConcurrentSweepersEnqueueOnce(t *testing.T) {
	b := setup(t)
	b.addHits(t, 500, time.Now().Add(-time.Minute))
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		s := b.sweeper(t, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.Sweep(context.Background()) // losers report the lost race
		}()
	}
	wg.Wait()
	b.sweep(t, b.sweeper(t, nil))
	if jobs := b.jobs(t); len(jobs) != 2 { // one per rule
		t.Fatalf("want 2 jobs (one per rule), got %d: %+v", len(jobs), jobs)
	}
}

func TestPendingCrossingIsHandedOnNextSweep(t *testing.T) {
	b := setup(t)
	b.cfg.Rules = b.cfg.Rules[1:]
	s := b.sweeper(t, nil)
	// A sweeper that claimed a crossing and died before publishing it.
	key := "milestone." + bus.Key("example.com", "/pricing")
	x := crossing.Crossing{Key: key + ".1", Rule: "milestone", Site: "example.com", Path: "/pricing", Window: "all time", Threshold: 150, Count: 151, CrossedAt: time.Now()}
	if _, err := s.save(context.Background(), key, state{Episode: 1, Pending: &x}, 0); err != nil {
		t.Fatal(err)
	}
	b.sweep(t, s)
	b.sweep(t, s)
	if jobs := b.jobs(t); len(jobs) != 1 || jobs[0].Key != x.Key {
		t.Fatalf("jobs: %+v", jobs)
	}
}

func TestValidateNamesKeys(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Schedule = "every ten"
	cfg.Rules = []Rule{{Name: "Bad Name", Path: "pricing", Window: "5s", Recipients: []string{"not an address"}}}
	err := cfg.Validate()
	for _, want := range []string{"sweeper.schedule", "sweeper.rules[0].name", "sweeper.rules[0].path", "sweeper.rules[0].threshold", "sweeper.rules[0].window", "sweeper.rules[0].recipients[0]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}
