// Package sweep evaluates threshold rules against the per-minute counts and
// turns each crossing into exactly one notification job.
//
// Per rule and page the sweeper keeps a small state in NATS KV: whether the
// rule is armed, how many times it fired (the episode), and a crossing
// claimed but not yet handed on. Claiming is a revision-checked write, so
// two sweepers racing on the same page claim the crossing once; a sweeper
// that dies after claiming leaves the crossing pending, and the next sweep
// hands it on. Jobs carry the crossing key as Nats-Msg-Id, and workers keep
// a sent ledger, so a crossing handed on twice is still mailed once.
package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"

	"github.com/pagewatch/pagewatch/pipeline/bus"
	"github.com/pagewatch/pagewatch/pipeline/crossing"
)

// Counter answers "how many hits had this page since then" (zero time:
// all time).
type Counter interface {
	PageCount(ctx context.Context, site, path string, since time.Time) (uint64, error)
}

// Recorder keeps the crossing history.
type Recorder interface {
	RecordCrossing(ctx context.Context, x crossing.Crossing) error
}

// Sweeper evaluates the rules.
type Sweeper struct {
	cfg     Config
	counts  Counter
	history Recorder
	state   jetstream.KeyValue
	bus     *bus.Bus
	logger  *slog.Logger
	metrics *metrics
	now     func() time.Time
}

// New returns a Sweeper, creating the jobs stream and state bucket.
func New(ctx context.Context, cfg Config, b *bus.Bus, counts Counter, history Recorder, logger *slog.Logger, reg prometheus.Registerer) (*Sweeper, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, err := b.JobsStream(ctx); err != nil {
		return nil, err
	}
	state, err := b.KV(ctx, bus.BucketSweeps, 0)
	if err != nil {
		return nil, err
	}
	return &Sweeper{cfg: cfg, counts: counts, history: history, state: state, bus: b,
		logger: logger, metrics: newMetrics(reg, cfg.Rules), now: time.Now}, nil
}

// Run sweeps on the configured schedule until ctx is done. A sweep that is
// still running when the next is due makes that one skip, and a panic in
// a sweep is logged, not fatal.
func (s *Sweeper) Run(ctx context.Context) error {
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
	s.logger.Info("sweeper scheduled", "schedule", s.cfg.Schedule, "rules", len(s.cfg.Rules))
	c.Start()
	<-ctx.Done()
	<-c.Stop().Done() // the sweep in flight sees ctx done and returns
	return nil
}

// Sweep evaluates every rule once.
func (s *Sweeper) Sweep(ctx context.Context) error {
	start := s.now()
	var errs []error
	for _, r := range s.cfg.Rules {
		if err := s.evaluate(ctx, r); err != nil {
			s.metrics.errors.Inc()
			errs = append(errs, fmt.Errorf("rule %s: %w", r.Name, err))
		}
	}
	s.metrics.sweeps.Inc()
	s.metrics.duration.Observe(time.Since(start).Seconds())
	return errors.Join(errs...)
}

// state is what the sweeper remembers per rule and page.
type state struct {
	Armed   bool               `json:"armed"`
	Episode uint64             `json:"episode"`
	Pending *crossing.Crossing `json:"pending,omitempty"`
}

func (s *Sweeper) evaluate(ctx context.Context, r Rule) error {
	window, allTime, _ := r.window()
	now := s.now().UTC()
	var since time.Time
	if !allTime {
		since = now.Add(-window)
	}
	count, err := s.counts.PageCount(ctx, r.Site, r.Path, since)
	if err != nil {
		return err
	}
	key := r.Name + "." + bus.Key(r.Site, r.Path)
	st, rev, err := s.load(ctx, key)
	if err != nil {
		return err
	}

	// Step 1: hand on a crossing an earlier sweep claimed but did not finish.
	if st.Pending != nil {
		if err := s.handOn(ctx, *st.Pending); err != nil {
			return err
		}
		st.Pending = nil
		if rev, err = s.save(ctx, key, st, rev); err != nil {
			return err
		}
	}

	above := count > r.Threshold
	switch {
	case above && st.Armed:
		// Step 2: claim the crossing; a concurrent sweeper loses the race here.
		st.Episode++
		x := crossing.Crossing{
			Key: fmt.Sprintf("%s.%d", key, st.Episode), Rule: r.Name, Site: r.Site, Path: r.Path,
			Window: r.windowText(), Threshold: r.Threshold, Count: count, CrossedAt: now,
			Recipients: r.Recipients,
		}
		st.Armed, st.Pending = false, &x
		if rev, err = s.save(ctx, key, st, rev); err != nil {
			return err
		}
		// Step 3: hand it on, then clear the claim.
		if err := s.handOn(ctx, x); err != nil {
			return err
		}
		s.metrics.crossings.WithLabelValues(r.Name).Inc()
		s.logger.Info("threshold crossed", "rule", r.Name, "site", r.Site, "path", r.Path, "count", count, "threshold", r.Threshold, "key", x.Key)
		st.Pending = nil
		_, err = s.save(ctx, key, st, rev)
		return err
	case !above && !st.Armed && !allTime:
		// Re-arm a rolling rule once the count fell back.
		st.Armed = true
		_, err = s.save(ctx, key, st, rev)
		return err
	}
	return nil
}

// handOn publishes the job and records the crossing. Both are idempotent,
// so a repeat after a crash is harmless.
func (s *Sweeper) handOn(ctx context.Context, x crossing.Crossing) error {
	body, err := x.Marshal()
	if err != nil {
		return err
	}
	msg := nats.NewMsg(s.bus.JobsSubject(bus.Key(x.Site, x.Path)))
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, x.Key)
	if _, err := s.bus.JS.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("publish job %s: %w", x.Key, err)
	}
	return s.history.RecordCrossing(ctx, x)
}

func (s *Sweeper) load(ctx context.Context, key string) (state, uint64, error) {
	e, err := s.state.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return state{Armed: true}, 0, nil
	}
	if err != nil {
		return state{}, 0, fmt.Errorf("load state %s: %w", key, err)
	}
	var st state
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		return state{}, 0, fmt.Errorf("decode state %s: %w", key, err)
	}
	return st, e.Revision(), nil
}

// save writes the state if nobody else did since we read it.
func (s *Sweeper) save(ctx context.Context, key string, st state, rev uint64) (uint64, error) {
	body, err := json.Marshal(st)
	if err != nil {
		return 0, fmt.Errorf("encode state %s: %w", key, err)
	}
	if rev == 0 {
		rev, err = s.state.Create(ctx, key, body)
	} else {
		rev, err = s.state.Update(ctx, key, body, rev)
	}
	if err != nil {
		return 0, fmt.Errorf("save state %s (another sweeper may have moved it; it will be seen next sweep): %w", key, err)
	}
	return rev, nil
}
