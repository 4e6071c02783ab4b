// Package sweep evaluates threshold rules against the per-minute counts and
// turns each crossing into exactly one notification job.
//
// A sweep, step by step (Sweeper.sweep):
//
//  1. lead:    only the replica holding the lease in NATS KV sweeps;
//  2. seal:    whole days older than a day are summed once into page_days;
//  3. plan:    every rule at its window now, plus what was missed while no
//     sweeper ran (calendar windows that closed, rolling windows at each
//     minute that passed);
//  4. count:   one ClickHouse query per distinct window end, over all pages;
//  5. judge:   each rule and page's state (NATS KV) steps through its
//     counts in time order (domain/rules: rising edge, re-arm,
//     milestones, calendar windows);
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
// A sweeper that dies between claim and release leaves the crossings
// pending in their states; the next sweep hands them on again, and the
// jobs' IDs and the workers' sent ledger make the repeat harmless.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
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

// Reloader reads the rules again (the config file and the rules path) and
// lists the files they came from, which are watched for changes.
type Reloader interface {
	Load() ([]rules.Rule, error)
	Files() []string
}

// Deps are what a Sweeper works with.
type Deps struct {
	Bus     *bus.Bus // the jobs stream, the state and lease buckets
	Counts  Counter  // the per-minute and per-day counts (ClickHouse)
	History Recorder // the crossings history (ClickHouse)
	// Explain adds the rank, referrers and busiest minute to each
	// crossing's why (explain.go). Nil: the why has the sweep's part only.
	Explain Explainer
	// Rules reads the rules again on TriggerReload and when one of its
	// files changes. Nil: the rules given to New stay.
	Rules    Reloader
	Logger   *slog.Logger
	Registry prometheus.Registerer
}

// Sweeper evaluates the rules.
type Sweeper struct {
	cfg       Config
	counts    Counter
	history   Recorder
	explainer Explainer
	state     *stateStore
	leader    *leadership
	bus       *bus.Bus
	logger    *slog.Logger
	metrics   *metrics
	now       func() time.Time

	reloader Reloader
	reload   chan struct{} // TriggerReload's requests, for Run
	rulesMu  sync.Mutex
	set      *ruleSet

	syncOnce sync.Once
	syncErr  error

	sealMu      sync.Mutex
	sealed      time.Time // page_days' boundary (seal)
	sealedHours time.Time // page_hours' (sealHours)

	baselines *baselines
}

// New returns a Sweeper over the given rules (validated, as LoadRules
// returns them), creating the jobs stream and the state buckets.
func New(ctx context.Context, cfg Config, rs []rules.Rule, deps Deps) (*Sweeper, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := deps.Bus
	if _, err := b.JobsStream(ctx); err != nil {
		return nil, err
	}
	state, err := b.KV(ctx, bus.BucketSweeps, 0)
	if err != nil {
		return nil, err
	}
	leases, err := b.KV(ctx, bus.BucketSweeperLease, cfg.LeaderTTL)
	if err != nil {
		return nil, err
	}
	s := &Sweeper{cfg: cfg, counts: deps.Counts, history: deps.History, explainer: deps.Explain, state: newStateStore(state),
		leader: newLeadership(leases, cfg.LeaderTTL), bus: b, logger: deps.Logger,
		metrics: newMetrics(deps.Registry), now: time.Now, reloader: deps.Rules, reload: make(chan struct{}, 1),
		baselines: &baselines{}}
	s.setRules(rs)
	return s, nil
}

func (s *Sweeper) setRules(rs []rules.Rule) {
	set := newRuleSet(rs)
	s.rulesMu.Lock()
	s.set = set
	s.rulesMu.Unlock()
	s.metrics.rules.Set(float64(len(rs)))
	for _, r := range rs {
		s.metrics.crossings.WithLabelValues(r.Name)
	}
}

func (s *Sweeper) rules() *ruleSet {
	s.rulesMu.Lock()
	defer s.rulesMu.Unlock()
	return s.set
}

// Reload reads the rules again. An invalid set is rejected whole and the
// rules in force stay: a typo must not silence every alert.
func (s *Sweeper) Reload() error {
	if s.reloader == nil {
		return errors.New("rules were given at start and cannot be reloaded")
	}
	rs, err := s.reloader.Load()
	if err != nil {
		s.metrics.reloads.WithLabelValues("rejected").Inc()
		s.logger.Error("rules rejected; the previous rules stay in force", "err", err)
		return err
	}
	s.setRules(rs)
	s.metrics.reloads.WithLabelValues("ok").Inc()
	s.logger.Info("rules reloaded", "rules", len(rs))
	return nil
}

// TriggerReload asks Run to read the rules again (main calls it on
// SIGHUP). It does not wait: Reload is the synchronous form.
func (s *Sweeper) TriggerReload() {
	select {
	case s.reload <- struct{}{}:
	default: // a reload is already due
	}
}

// Run sweeps on the configured schedule until ctx is done, reloading the
// rules on TriggerReload or when a rules file changes. A sweep still
// running when the next is due makes that one skip, and a panic in a
// sweep is logged, not fatal.
func (s *Sweeper) Run(ctx context.Context) error {
	if err := s.startSync(ctx); err != nil {
		return err
	}
	cl := cronLogger{s.logger}
	c := cron.New(cron.WithParser(cronParser), cron.WithLogger(cl),
		cron.WithChain(cron.Recover(cl), cron.SkipIfStillRunning(cl)))
	if _, err := c.AddFunc(s.cfg.Schedule, func() {
		if err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.logger.Error("sweep failed", "err", err)
		}
	}); err != nil {
		return fmt.Errorf("sweeper.schedule: %w", err)
	}
	s.logger.Info("sweeper scheduled", "schedule", s.cfg.Schedule, "rules", len(s.rules().rules))
	c.Start()
	s.watchRules(ctx)
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

func (s *Sweeper) startSync(ctx context.Context) error {
	s.syncOnce.Do(func() { s.syncErr = s.state.sync(ctx) })
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
	s.metrics.sweeps.Inc()
	if err != nil {
		s.metrics.errors.Inc()
	}
	return err
}

// sweep is one sweep at time now; see the package comment for the steps.
func (s *Sweeper) sweep(ctx context.Context, now time.Time) error {
	set := s.rules()
	s.seal(ctx, now)
	last, _, err := s.state.progress(ctx)
	if err != nil {
		return err
	}
	if !last.IsZero() {
		s.metrics.lag.Set(now.Sub(last).Seconds())
	}
	current := s.currentPoints(set, now)
	pts := append(current, s.calendarCatchUp(set, last, now)...)
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
	claimed := s.claim(ctx, verdicts)
	jobs, all := s.guard(claimed)
	s.explain(ctx, jobs)
	if err := s.handOn(ctx, jobs, all); err != nil {
		return err
	}
	for _, x := range all {
		s.metrics.crossings.WithLabelValues(x.Rule).Inc()
		s.logger.Info("threshold crossed", "rule", x.Rule, "site", x.Site, "path", x.Path, "count", x.Count, "threshold", x.Threshold, "key", x.Key)
	}
	if err := s.release(ctx, claimed); err != nil {
		return err
	}
	return s.state.setProgress(ctx, now)
}

// watchRules reloads on TriggerReload and when a rules file changes,
// until ctx is done.
func (s *Sweeper) watchRules(ctx context.Context) {
	var files []string
	if s.reloader != nil {
		files = s.reloader.Files()
	}
	seen := stamps(files)
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.reload:
			if s.Reload() == nil && s.reloader != nil {
				seen = stamps(s.reloader.Files())
			}
		case <-tick.C:
			if s.reloader == nil {
				continue
			}
			now := stamps(s.reloader.Files())
			if !maps.Equal(seen, now) {
				s.logger.Info("a rules file changed; reloading")
				_ = s.Reload() // on error the old rules stay; the log says why
				seen = now
			}
		}
	}
}

// stamps identifies each file's content cheaply: size and modification
// time, or -1 for a file that is gone.
func stamps(files []string) map[string]string {
	out := make(map[string]string, len(files))
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			out[f] = "-1"
			continue
		}
		out[f] = fmt.Sprintf("%d/%d", st.Size(), st.ModTime().UnixNano())
	}
	return out
}
