package sweep

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/domain/rules"
	"github.com/pagewatch/pagewatch/internal/testenv"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/pipeline/tail/tailstatus"
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
	cfg.Rules = []rules.Rule{
		rule("hourly", "/pricing", "1h", 100),
		rule("milestone", "/pricing", "all", 150),
	}
	return &bundle{bus: b, ch: c, chSrv: srv, cfg: cfg, logger: logger}
}

// rule is an exact-path rule on example.com.
func rule(name, path, window string, thresholds ...uint64) rules.Rule {
	return rules.Rule{Name: name, Site: "example.com", Path: path, Thresholds: thresholds,
		Window: rules.ParseWindow(window), Notify: rules.Notify{Recipients: []string{"ops@example.com"}}}
}

// clock is a controllable now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func (b *bundle) sweeper(t *testing.T, c *clock) *Sweeper {
	t.Helper()
	rs, err := LoadRules(b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // stops the state watcher
	s, err := New(b.cfg, rs, Deps{Bus: b.bus, Counts: b.ch.Counts(), History: b.ch.History(), Explain: b.ch.Traffic(),
		Feeds: tailstatus.Feeds{Bus: b.bus}, Logger: b.logger, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if c != nil {
		s.now = c.now
	}
	if err := s.startSync(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.leader.release(context.Background()) })
	return s
}

// addHits loads n hits of a page at a time, as one JetStream batch.
func (b *bundle) addHits(t *testing.T, path string, n int, at time.Time) {
	t.Helper()
	b.seq++
	batch := hit.Batch{Seq: b.seq}
	for i := 0; i < n; i++ {
		batch.Hits = append(batch.Hits, hit.Hit{Time: at, Site: "example.com", Path: path, Offset: uint64(i)})
	}
	if err := b.ch.Hits().InsertHits(context.Background(), []hit.Batch{batch}); err != nil {
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

// fired lists "rule threshold count" of the jobs, sorted: jobs of one
// sweep are published concurrently.
func fired(jobs []crossing.Crossing) []string {
	var out []string
	for _, x := range jobs {
		out = append(out, fmt.Sprintf("%s %d %d", x.Rule, x.Threshold, x.Count))
	}
	slices.Sort(out)
	return out
}

func TestRollingRuleFiresOnRisingEdgeAndRearms(t *testing.T) {
	b := setup(t)
	b.cfg.Rules = b.cfg.Rules[:1]
	now := time.Now().UTC().Truncate(time.Minute)
	c := &clock{t: now}
	s := b.sweeper(t, c)

	b.addHits(t, "/pricing", 100, now.Add(-10*time.Minute))
	b.sweep(t, s)
	if n := len(b.jobs(t)); n != 0 {
		t.Fatalf("100 hits is not more than 100, got %d jobs", n)
	}
	b.addHits(t, "/pricing", 1, now.Add(-5*time.Minute))
	b.sweep(t, s)
	b.sweep(t, s) // still above: no second job
	jobs := b.jobs(t)
	if len(jobs) != 1 || jobs[0].Count != 101 || jobs[0].Window != "1h" {
		t.Fatalf("jobs after crossing: %+v", jobs)
	}
	// An hour later the window is empty: the rule re-arms, then fires again.
	c.set(now.Add(time.Hour))
	b.sweep(t, s)
	b.addHits(t, "/pricing", 150, now.Add(time.Hour-time.Minute))
	b.sweep(t, s)
	jobs = b.jobs(t)
	if len(jobs) != 2 || jobs[0].Key == jobs[1].Key {
		t.Fatalf("want a second crossing with a new key, got %+v", jobs)
	}
}

func TestHysteresisAndCooldown(t *testing.T) {
	b := setup(t)
	r := rule("hot", "/pricing", "10m", 100)
	r.Rearm = rules.Rearm{Hysteresis: 0.2, Cooldown: 30 * time.Minute}
	b.cfg.Rules = []rules.Rule{r}
	base := time.Now().UTC().Truncate(time.Minute).Add(-2 * time.Hour)
	c := &clock{t: base}
	s := b.sweeper(t, c)
	at := func(m int) time.Time { return base.Add(time.Duration(m) * time.Minute) }
	step := func(m int) { c.set(at(m).Add(30 * time.Second)); b.sweep(t, s) }

	b.addHits(t, "/pricing", 101, at(0))
	step(0) // 101 > 100: fires
	b.addHits(t, "/pricing", 90, at(10))
	step(10) // 90: below 100 but above the re-arm level 80: stays quiet
	b.addHits(t, "/pricing", 20, at(11))
	step(11) // 110: not re-armed, so no second crossing
	if got := fired(b.jobs(t)); len(got) != 1 {
		t.Fatalf("after hovering above the re-arm level: %v", got)
	}
	b.addHits(t, "/pricing", 70, at(22))
	step(22) // 70 <= 80: re-arms
	b.addHits(t, "/pricing", 40, at(23))
	step(23) // 110: fires again
	if got := fired(b.jobs(t)); len(got) != 2 {
		t.Fatalf("after re-arming below the hysteresis level: %v", got)
	}
	// The count stays high; after the cooldown the rule fires once more.
	for m := 30; m <= 60; m += 5 {
		b.addHits(t, "/pricing", 110, at(m))
		step(m)
	}
	if got := fired(b.jobs(t)); len(got) != 3 {
		t.Fatalf("want a reminder after the 30m cooldown, got %v", got)
	}
}

func TestMilestonesFireOnceEach(t *testing.T) {
	b := setup(t)
	b.cfg.Rules = []rules.Rule{rule("launch", "/launch", "all", 100, 1000, 10000)}
	s := b.sweeper(t, nil)
	b.addHits(t, "/launch", 1500, time.Now().Add(-72*time.Hour)) // sealed into page_days
	for i := 0; i < 3; i++ {
		b.sweep(t, s)
	}
	if got := fired(b.jobs(t)); !slices.Equal(got, []string{"launch 100 1500", "launch 1000 1500"}) {
		t.Fatalf("want milestones 100 and 1000 once each, got %v", got)
	}
	b.addHits(t, "/launch", 9000, time.Now().Add(-time.Minute))
	b.sweep(t, s)
	b.sweep(t, s)
	if got := fired(b.jobs(t)); len(got) != 3 || got[2] != "launch 10000 10500" {
		t.Fatalf("want 10000 once more, got %v", got)
	}
	if got := b.chSrv.Query(t, "SELECT count() FROM pagewatch.crossings FINAL"); got != "3\n" {
		t.Fatalf("crossings history rows = %q, want 3", got)
	}
}

func TestConcurrentSweepersEnqueueOnce(t *testing.T) {
	b := setup(t)
	b.addHits(t, "/pricing", 500, time.Now().Add(-time.Minute))
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		s := b.sweeper(t, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Straight to the sweep, past the lease: the claims alone
			// must keep the crossings single.
			_ = s.sweep(context.Background(), s.now())
		}()
	}
	wg.Wait()
	b.sweep(t, b.sweeper(t, nil))
	if jobs := b.jobs(t); len(jobs) != 2 { // one per rule
		t.Fatalf("want 2 jobs (one per rule), got %d: %v", len(jobs), fired(jobs))
	}
}

func TestPendingCrossingIsHandedOnNextSweep(t *testing.T) {
	b := setup(t)
	b.cfg.Rules = b.cfg.Rules[1:]
	s := b.sweeper(t, nil)
	// A sweeper that claimed a crossing and died before publishing it.
	key := "milestone." + bus.Key("example.com", "/pricing")
	x := crossing.Crossing{Key: key + ".150", Rule: "milestone", Site: "example.com", Path: "/pricing", Window: "all time", Threshold: 150, Count: 151, CrossedAt: time.Now()}
	st := pageState{State: rules.State{Fired: []uint64{150}, Episode: 1}, Pending: []crossing.Crossing{x}}
	if _, err := s.state.put(context.Background(), key, st, 0); err != nil {
		t.Fatal(err)
	}
	b.addHits(t, "/pricing", 200, time.Now().Add(-time.Minute))
	b.sweep(t, s)
	b.sweep(t, s)
	if jobs := b.jobs(t); len(jobs) != 1 || jobs[0].Key != x.Key {
		t.Fatalf("jobs: %+v", jobs)
	}
}

func TestValidateNamesKeys(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Schedule = "every ten"
	cfg.LeaderTTL = 0
	cfg.Rules = []rules.Rule{{Name: "Bad Name", Path: "pricing", Window: rules.ParseWindow("5s"), Notify: rules.Notify{Recipients: []string{"not an address"}}}}
	err := cfg.Validate()
	for _, want := range []string{"sweeper.schedule", "sweeper.leader_ttl", "sweeper.rules[0].name", "sweeper.rules[0].match", "sweeper.rules[0].threshold", "sweeper.rules[0].window", "sweeper.rules[0].notify.recipients[0]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}
