// Package retention drops old raw hits on a schedule. ClickHouse 18.16 has
// no TTL, so the hits table is partitioned by day and whole days older than
// ingest.load.retention.raw_hits_days are dropped. The per-minute counts
// (page_minutes) are kept: all-time rules read them.
//
// Every loader runs it. With Deps.Claims (a NATS KV bucket shared by the
// loaders) only the first loader to claim a period does the work in it,
// so a cluster issues its ON CLUSTER drops once per period rather than
// once per loader. Without claims, or when a claimant dies, a day may be
// dropped twice, which is harmless: dropping a partition that is already
// gone is a no-op on 18.16 as on current servers (see sinks/clickhouse
// TestDropHitsBeforeTwice).
package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
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

// Store drops raw hits; sinks/clickhouse's Hits is one.
type Store interface {
	// DropHitsBefore drops the days of raw hits before cutoff's day and
	// returns their partition ids; on an error, those dropped before it.
	DropHitsBefore(ctx context.Context, cutoff time.Time) (dropped []string, err error)
}

// Claims is where runners claim periods; a jetstream.KeyValue is one.
type Claims interface {
	// Create writes key only if it does not exist (or was deleted).
	Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error)
	Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error
}

// ClaimsTTL is the TTL the claims bucket should have: longer than any
// sane period, so a claim outlives its period, and short enough that old
// claims do not pile up.
const ClaimsTTL = 48 * time.Hour

// Deps are what a Runner works with.
type Deps struct {
	Store Store
	// Claims, if set, makes the runners sharing it take turns: one run
	// per period of cfg.Every among them all. Owner names this runner in
	// its claims.
	Claims Claims
	Owner  string
	Logger *slog.Logger
	// Registry takes the metrics.
	Registry prometheus.Registerer
	// Now is the clock (nil: time.Now); tests fix it.
	Now func() time.Time
}

// Runner drops old raw hits at start and then every cfg.Every.
type Runner struct {
	cfg     Config
	deps    Deps
	logger  *slog.Logger
	now     func() time.Time
	metrics *metrics
	every   time.Duration // cfg.Every; tests shorten it
}

// New returns a Runner.
func New(cfg Config, deps Deps) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	return &Runner{cfg: cfg, deps: deps, logger: deps.Logger, now: now, metrics: newMetrics(deps.Registry), every: cfg.Every}, nil
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
	claim, mine, err := r.claim(ctx)
	if err != nil {
		r.metrics.errors.Inc()
		r.logger.Warn("raw hit retention: cannot claim this period; trying again later", "err", err, "retry_in", r.every)
		return nil, fmt.Errorf("raw hit retention: %w", err)
	}
	if !mine {
		r.metrics.elsewhere.Inc()
		// The period is in hand: this loader is as healthy as the one
		// that runs it, for the alert on stale retention.
		r.metrics.lastSuccess.Set(float64(r.now().Unix()))
		r.logger.Debug("raw hit retention of this period claimed by another loader", "claim", claim)
		return nil, nil
	}
	dropped, err := r.deps.Store.DropHitsBefore(ctx, cutoff)
	r.metrics.dropped.Add(float64(len(dropped)))
	if len(dropped) > 0 {
		r.logger.Info("dropped old raw hits", "days", dropped, "before", cutoff.UTC().Format(time.DateOnly), "raw_hits_days", r.cfg.RawHitsDays)
	}
	if err != nil {
		if ctx.Err() != nil { // shutting down: not the store's fault
			return dropped, err
		}
		r.release(claim)
		r.metrics.errors.Inc()
		r.logger.Warn("raw hit retention failed; trying again later", "err", err, "retry_in", r.every)
		return dropped, fmt.Errorf("raw hit retention: %w", err)
	}
	r.metrics.lastSuccess.Set(float64(r.now().Unix()))
	r.logger.Debug("raw hit retention ran", "before", cutoff.UTC().Format(time.DateOnly), "dropped", len(dropped))
	return dropped, nil
}

// claim takes the current period (cfg.Every long, as time.Truncate cuts
// it, the same on every loader) for this runner. mine is true without
// claims: a lone runner always runs.
func (r *Runner) claim(ctx context.Context) (key string, mine bool, err error) {
	if r.deps.Claims == nil {
		return "", true, nil
	}
	period := r.now().Truncate(r.cfg.Every)
	key = "raw_hits." + strconv.FormatInt(period.Unix(), 10)
	_, err = r.deps.Claims.Create(ctx, key, []byte(r.deps.Owner))
	switch {
	case errors.Is(err, jetstream.ErrKeyExists):
		return key, false, nil
	case err != nil:
		return key, false, fmt.Errorf("claim %s: %w", key, err)
	}
	return key, true, nil
}

// release gives a failed period's claim back, so that another runner (or
// this one at its next tick) tries the period again instead of it being
// skipped. A release that fails only delays the next run by a period.
func (r *Runner) release(key string) {
	if key == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.deps.Claims.Delete(ctx, key); err != nil {
		r.logger.Warn("raw hit retention: cannot release the claim of a failed run; the next period retries", "claim", key, "err", err)
	}
}

type metrics struct {
	dropped, errors, elsewhere prometheus.Counter
	lastSuccess                prometheus.Gauge
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
		elsewhere: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_retention_claimed_elsewhere_total",
			Help: "Retention runs skipped because another loader claimed the period (ingest.load.retention.every) first.",
		}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pagewatch_retention_last_success_timestamp_seconds",
			Help: "Unix time of the last retention run that succeeded, or was claimed by another loader; 0 before the first.",
		}),
	}
	reg.MustRegister(m.dropped, m.errors, m.elsewhere, m.lastSuccess)
	return m
}
