// Package sweep evaluates threshold rules against the per-minute counts and
// turns each crossing into exactly one notification job.
//
// A sweep, step by step (Sweeper.sweep):
//
//  1. lead:    only the replica holding the lease in NATS KV sweeps
//     (leadership);
//  2. seal:    whole days older than a day are summed once into page_days
//     (sealing);
//  3. plan:    every rule at its window now, plus what was missed while no
//     sweeper ran (calendar windows that closed, rolling windows at each
//     minute that passed);
//  4. count:   one ClickHouse query per distinct window end, over all pages;
//  5. judge:   each rule and page's state (NATS KV, stateStore) steps
//     through its counts in time order (domain/rules: rising edge,
//     re-arm, milestones, calendar windows); a rule with a normal is
//     judged against it (baselines), and no drop while its site's data
//     is late (freshness);
//  6. claim:   the new states are written, the crossings that fired
//     recorded in them as pending, each write conditional on the revision
//     read: of two sweepers racing, one claims;
//  7. guard:   per rule, the highest counts are mailed one by one and the
//     rest folded into one digest job;
//  8. hand on: jobs are published with the crossing key as Nats-Msg-Id and
//     every crossing is written to the ClickHouse history;
//  9. release: the claims are cleared, and the sweep's time recorded for
//     the next catch-up.
//
// Steps 6 to 9, all but recording the sweep's time, are handOn's. The
// rules in force are liveRules', swapped whole on a reload.
//
// A sweeper that dies between claim and release leaves the crossings
// pending in their states; the next sweep hands them on again, and the
// jobs' IDs and the workers' sent ledger make the repeat harmless.
package sweep

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/rules"
)

// Recorder keeps the crossing history.
type Recorder interface {
	RecordCrossings(ctx context.Context, xs []crossing.Crossing) error
}

// Deps are what a Sweeper works with.
type Deps struct {
	Bus     *bus.Bus // the jobs stream, the state and lease buckets
	Counts  Counter  // the per-minute and per-day counts (ClickHouse)
	History Recorder // the crossings history (ClickHouse)
	// Explain adds the rank, referrers and busiest minute to each
	// crossing's why (explain.go). Nil: the why has the sweep's part only.
	Explain Explainer
	// Feeds says what the tailers and loaders report of a site's logs,
	// for its "no data" message (explain.go). Nil: the message says
	// when its data stopped only.
	Feeds Feeder
	// Rules reads the rules again on TriggerReload and when one of its
	// files changes. Nil: the rules given to New stay.
	Rules    Reloader
	Logger   *slog.Logger
	Registry prometheus.Registerer
}

// Sweeper evaluates the rules: it schedules the sweeps, holds the lease,
// and runs each sweep through its parts (see the package comment).
type Sweeper struct {
	cfg       Config
	bus       *bus.Bus
	counts    Counter
	explainer Explainer
	feeds     Feeder
	state     *stateStore
	leader    *leadership
	logger    *slog.Logger
	metrics   *metrics
	now       func() time.Time

	rules     *liveRules
	seals     *sealing
	baselines *baselines
	freshness *freshness
	handOn    *handOn

	syncOnce sync.Once
	syncErr  error
}

// New returns a Sweeper over the given rules (validated, as LoadRules
// returns them). It does no I/O: the first Run or Sweep creates the jobs
// stream and the state buckets, and loads the pages' states.
func New(cfg Config, rs []rules.Rule, deps Deps) (*Sweeper, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	state, m := newStateStore(nil, deps.Logger), newMetrics(deps.Registry)
	seals := newSealing(deps.Counts, cfg, deps.Logger)
	baselines := newBaselines(deps.Counts, seals, deps.Logger)
	baselines.reads = m
	return &Sweeper{cfg: cfg, bus: deps.Bus, counts: deps.Counts, explainer: deps.Explain, feeds: deps.Feeds, state: state,
		leader: newLeadership(nil, cfg.LeaderTTL), logger: deps.Logger, metrics: m, now: time.Now,
		rules:     newLiveRules(rs, deps.Rules, m, deps.Logger),
		seals:     seals,
		baselines: baselines,
		freshness: newFreshness(deps.Counts, baselines.siteRates, state, cfg.DataLateAfter, deps.Logger),
		handOn:    newHandOn(state, deps.Bus, deps.History, m, deps.Logger),
	}, nil
}

// open creates the jobs stream and the state and lease buckets, and
// hands the buckets to the parts that keep them.
func (s *Sweeper) open(ctx context.Context) error {
	if _, err := s.bus.JobsStream(ctx); err != nil {
		return err
	}
	stateKV, err := s.bus.KV(ctx, bus.BucketSweeps, 0)
	if err != nil {
		return err
	}
	leases, err := s.bus.KV(ctx, bus.BucketSweeperLease, s.cfg.LeaderTTL)
	if err != nil {
		return err
	}
	s.state.attach(stateKV)
	s.leader.attach(leases)
	return nil
}

// Reload reads the rules again. An invalid set is rejected whole and the
// rules in force stay: a typo must not silence every alert.
func (s *Sweeper) Reload() error { return s.rules.reload() }

// TriggerReload asks Run to read the rules again (main calls it on
// SIGHUP). It does not wait: Reload is the synchronous form.
func (s *Sweeper) TriggerReload() { s.rules.trigger() }

// Run sweeps on the configured schedule until ctx is done, reloading the
// rules on TriggerReload or when a rules file changes. A sweep still
// running when the next is due makes that one skip, and a panic in a
// sweep is logged, not fatal.
func (s *Sweeper) Run(ctx context.Context) error {
	if err := s.startSync(ctx); err != nil {
		return err
	}
	cl := cronLogger{s.logger}
	c := cron.New(cron.WithParser(cron.NewParser(scheduleFields)), cron.WithLogger(cl),
		cron.WithChain(cron.Recover(cl), cron.SkipIfStillRunning(cl)))
	if _, err := c.AddFunc(s.cfg.Schedule, func() {
		if err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.logger.Error("sweep failed", "err", err)
		}
	}); err != nil {
		return fmt.Errorf("sweeper.schedule: %w", err)
	}
	s.logger.Info("sweeper scheduled", "schedule", s.cfg.Schedule, "rules", len(s.rules.current().rules))
	c.Start()
	s.rules.watch(ctx)
	<-c.Stop().Done() // the sweep in flight sees ctx done and returns
	s.Close(ctx)
	return nil
}

// Close gives up the lease, so another replica takes over at once rather
// than after leader_ttl. Run does it on the way out; a --once caller
// does it after its sweep.
func (s *Sweeper) Close(ctx context.Context) {
	release, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	s.leader.release(release)
}

// startSync opens the stream and buckets and loads the pages' states,
// once: Run's and the first Sweep's first step.
func (s *Sweeper) startSync(ctx context.Context) error {
	s.syncOnce.Do(func() {
		if s.syncErr = s.open(ctx); s.syncErr == nil {
			s.syncErr = s.state.sync(ctx)
		}
	})
	return s.syncErr
}

// Sweep runs one sweep if this sweeper holds (or can take) the lease.
func (s *Sweeper) Sweep(ctx context.Context) error {
	if err := s.startSync(ctx); err != nil {
		return err
	}
	lead, holder, err := s.leader.ensure(ctx)
	if err != nil {
		return err
	}
	if !lead {
		s.metrics.leader.Set(0)
		s.logger.Debug("another sweeper leads; not sweeping", "leader", holder)
		return nil
	}
	s.metrics.leader.Set(1)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.SweepTimeout)
	defer cancel()
	start := time.Now()
	err = s.sweep(ctx, s.now())
	s.metrics.duration.Observe(time.Since(start).Seconds())
	s.recordSweep(ctx, start, err)
	s.metrics.sweeps.Inc()
	if err != nil {
		s.metrics.errors.Inc()
	}
	return err
}

// sweep is one sweep at time now; see the package comment for the steps.
func (s *Sweeper) sweep(ctx context.Context, now time.Time) error {
	set := s.rules.current()
	set.sweepStarted()
	s.seals.seal(ctx, now, set.episodic)
	last, err := s.state.progress(ctx)
	if err != nil {
		return err
	}
	if !last.IsZero() {
		s.metrics.lag.Set(now.Sub(last).Seconds())
	}
	current := s.currentPoints(set, now)
	pts := slices.Concat(current, s.calendarCatchUp(set, last, now))
	obs, rows, err := s.count(ctx, set, pts, false)
	if err != nil {
		return err
	}
	more, err := s.rollingCatchUp(ctx, set, last, now, obs)
	if err != nil {
		return err
	}
	s.metrics.rows.Add(float64(rows + more))
	verdicts, err := s.judge(ctx, set, obs, current)
	if err != nil {
		return err
	}
	claimed := s.handOn.claim(ctx, verdicts)
	jobs, all := s.handOn.guard(claimed)
	s.explain(ctx, jobs)
	if err := s.handOn.publish(ctx, jobs, all); err != nil {
		return err
	}
	for _, x := range all {
		s.metrics.crossings.WithLabelValues(x.Rule).Inc()
		s.logger.Info("threshold crossed", "rule", x.Rule, "site", x.Site, "path", x.Path, "count", x.Count, "threshold", x.Threshold, "key", x.Key)
	}
	if err := s.handOn.release(ctx, claimed); err != nil {
		return err
	}
	return s.state.setProgress(ctx, now)
}
