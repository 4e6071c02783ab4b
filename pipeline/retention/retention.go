// Package retention drops old raw hits on a schedule. ClickHouse 18.16 has
// no TTL, so the hits table is partitioned by day and whole days older than
// ingest.load.retention.raw_hits_days are dropped. The per-minute counts
// (page_minutes) are kept: all-time rules read them.
//
// Every loader may run it: a day that two loaders drop at once is dropped
// twice, and dropping a partition that is already gone is a no-op on 18.16
// as on current servers (see sinks/clickhouse TestDropHitsBeforeTwice).
package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config is the `ingest.load.retention:` section.
type Config struct {
	// RawHitsDays is how many days of raw hits are kept, today included;
	// older days are dropped. 0 keeps them forever.
	RawHitsDays int `yaml:"raw_hits_days"`
	// Every is how often old days are looked for (also once at start).
	Every time.Duration `yaml:"every"`
}

// DefaultConfig returns the defaults documented in deploy/pagewatch.example.yaml.
func DefaultConfig() Config {
	return Config{RawHitsDays: 30, Every: time.Hour}
}

// maxDays is 100 years: a larger number is a typo, not a policy.
const maxDays = 36500

// Validate reports every problem, naming its key.
func (c Config) Validate() error {
	var errs []error
	if c.RawHitsDays < 0 || c.RawHitsDays > maxDays {
		errs = append(errs, fmt.Errorf("ingest.load.retention.raw_hits_days: must be 0 (keep forever) to %d, got %d", maxDays, c.RawHitsDays))
	}
	// Each run lists partitions on every shard; more often than once a
	// minute buys nothing when whole days are dropped.
	if c.Every < time.Minute {
		errs = append(errs, fmt.Errorf("ingest.load.retention.every: must be at least 1m, got %s", c.Every))
	}
	return errors.Join(errs...)
}

// Store drops raw hits; *clickhouse.Client is one.
type Store interface {
	// DropHitsBefore drops the days of raw hits before cutoff's day and
	// returns their partition ids; on an error, those dropped before it.
	DropHitsBefore(ctx context.Context, cutoff time.Time) (dropped []string, err error)
}

// Runner drops old raw hits at start and then every cfg.Every.
type Runner struct {
	cfg     Config
	store   Store
	logger  *slog.Logger
	now     func() time.Time
	metrics *metrics
	every   time.Duration // cfg.Every; tests shorten it
}

// New returns a Runner. now is the clock (nil: time.Now); tests fix it.
func New(cfg Config, store Store, logger *slog.Logger, reg prometheus.Registerer, now func() time.Time) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &Runner{cfg: cfg, store: store, logger: logger, now: now, metrics: newMetrics(reg), every: cfg.Every}, nil
}

// Run drops old days until ctx ends, then returns nil. A failed run is
// logged, counted and tried again at the next tick; it never ends Run.
func (r *Runner) Run(ctx context.Context) error {
	if r.cfg.RawHitsDays == 0 {
		r.logger.Info("raw hit retention off: raw hits are kept forever")
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		_, _ = r.RunOnce(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Cutoff is the time before whose day raw hits are dropped: RawHitsDays
// days ago, so that that many whole days, today included, are kept.
func (r *Runner) Cutoff() time.Time {
	return r.now().Add(-time.Duration(r.cfg.RawHitsDays-1) * 24 * time.Hour)
}

// RunOnce drops the raw hits older than Cutoff's day once, logging and
// counting the outcome. It returns the partition ids dropped.
func (r *Runner) RunOnce(ctx context.Context) ([]string, error) {
	if r.cfg.RawHitsDays == 0 {
		return nil, nil
	}
	cutoff := r.Cutoff()
	dropped, err := r.store.DropHitsBefore(ctx, cutoff)
	r.metrics.dropped.Add(float64(len(dropped)))
	if len(dropped) > 0 {
		r.logger.Info("dropped old raw hits", "days", dropped, "before", cutoff.UTC().Format(time.DateOnly), "raw_hits_days", r.cfg.RawHitsDays)
	}
	if err != nil {
		if ctx.Err() != nil { // shutting down: not the store's fault
			return dropped, err
		}
		r.metrics.errors.Inc()
		r.logger.Warn("raw hit retention failed; trying again later", "err", err, "retry_in", r.every)
		return dropped, fmt.Errorf("raw hit retention: %w", err)
	}
	r.metrics.lastSuccess.Set(float64(r.now().Unix()))
	r.logger.Debug("raw hit retention ran", "before", cutoff.UTC().Format(time.DateOnly), "dropped", len(dropped))
	return dropped, nil
}

type metrics struct {
	dropped, errors prometheus.Counter
	lastSuccess     prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_retention_hits_partitions_dropped_total",
			Help: "Days of raw hits dropped (a day several loaders dropped at once counts in each).",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_retention_errors_total",
			Help: "Retention runs that failed (tried again at the next run).",
		}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pagewatch_retention_last_success_timestamp_seconds",
			Help: "Unix time of the last retention run that succeeded; 0 before the first.",
		}),
	}
	reg.MustRegister(m.dropped, m.errors, m.lastSuccess)
	return m
}
