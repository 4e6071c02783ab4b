// Package load moves hits from JetStream into ClickHouse in large batches,
// acknowledging messages only after their insert succeeded. Any number of
// loaders share one durable consumer. A batch that is delivered again (a
// loader killed between insert and ack) is inserted again, and the store
// makes that harmless: rows are keyed by stream sequence and line offset.
//
// A loader is a two-stage pipeline, so that collecting the next batch
// overlaps inserting the current one:
//
//	collect (fetch, decode, dead-letter) → insert (retry, then ack)
//
// The stages hand over one batch at a time, so a loader holds at most
// `inserts` batches being inserted, one waiting and a partial one being
// collected: when ClickHouse is down, inserting stalls, collecting stops,
// and JetStream is the buffer.
package load

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/broker/retry"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/pipeline/retention"
)

// Config is the `ingest.load:` section.
type Config struct {
	Listen   string `yaml:"listen"`
	Consumer string `yaml:"consumer"`
	// A batch is inserted when it holds BatchRows hits or BatchBytes of
	// messages, or its first message is BatchAge old, whichever comes first.
	BatchRows  int           `yaml:"batch_rows"`
	BatchBytes int           `yaml:"batch_bytes"`
	BatchAge   time.Duration `yaml:"batch_age"`
	// AckWait is how long a message may stay unacknowledged before
	// JetStream gives it to another loader; slow inserts are kept alive
	// with progress acks, so this bounds how long a dead loader delays them.
	AckWait time.Duration `yaml:"ack_wait"`
	// Inserts is how many batches one loader inserts at once. ClickHouse
	// works on one insert with about one core, so two keep a small
	// server busy while the loader collects the next batch.
	Inserts int `yaml:"inserts"`
	// RetryMax caps the backoff between attempts at a failing insert or
	// fetch.
	RetryMax time.Duration `yaml:"retry_max"`
	// Retention drops old days of raw hits; loaders run it because they
	// are the ones writing them.
	Retention retention.Config `yaml:"retention"`
}

// DefaultConfig returns the defaults documented in deploy/pagewatch.example.yaml.
func DefaultConfig() Config {
	return Config{
		Listen:     "127.0.0.1:9102",
		Consumer:   "loader",
		BatchRows:  100_000,
		BatchBytes: 64 << 20,
		BatchAge:   time.Second,
		AckWait:    30 * time.Second,
		Inserts:    2,
		RetryMax:   30 * time.Second,
		Retention:  retention.DefaultConfig(),
	}
}

// Validate reports every problem, naming its key.
func (c Config) Validate() error {
	var errs []error
	if c.Consumer == "" {
		errs = append(errs, errors.New("ingest.load.consumer: must be set"))
	}
	if c.BatchRows < 1 || c.BatchRows > 10_000_000 {
		errs = append(errs, fmt.Errorf("ingest.load.batch_rows: must be 1..10000000, got %d", c.BatchRows))
	}
	if c.BatchBytes < 1<<20 || c.BatchBytes > 1<<30 {
		errs = append(errs, fmt.Errorf("ingest.load.batch_bytes: must be 1MiB..1GiB (1048576..1073741824), got %d", c.BatchBytes))
	}
	if c.BatchAge <= 0 {
		errs = append(errs, fmt.Errorf("ingest.load.batch_age: must be positive, got %s", c.BatchAge))
	}
	if c.AckWait < 5*time.Second || c.AckWait < 2*c.BatchAge {
		errs = append(errs, fmt.Errorf("ingest.load.ack_wait: must be at least 5s and twice ingest.load.batch_age (%s), got %s", c.BatchAge, c.AckWait))
	}
	if c.Inserts < 1 || c.Inserts > 16 {
		errs = append(errs, fmt.Errorf("ingest.load.inserts: must be 1..16, got %d", c.Inserts))
	}
	if c.RetryMax < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("ingest.load.retry_max: must be at least 100ms, got %s", c.RetryMax))
	}
	errs = append(errs, c.Retention.Validate())
	return errors.Join(errs...)
}

// maxAckPending is how many messages all loaders together may hold
// unacknowledged. Each loader holds up to inserts+2 batches; sized for
// three loaders of single-hit messages, the worst case, it never starves a
// loader of messages it could be inserting.
func (c Config) maxAckPending() int { return max(10_000, 3*(c.Inserts+2)*c.BatchRows) }

// Store receives batches of hits; inserting the same batch twice must not
// change any count.
type Store interface {
	InsertHits(ctx context.Context, batches []hit.Batch) error
}

// Loader is one loading process's share of the consumer.
type Loader struct {
	cfg     Config
	bus     *bus.Bus
	stream  jetstream.Stream
	mu      sync.Mutex // guards cons, replaced if deleted under us
	cons    jetstream.Consumer
	store   Store
	logger  *slog.Logger
	metrics *metrics
	leans   leanList
	// recreate restores the consumer if it is deleted under us.
	recreate func(context.Context) (jetstream.Consumer, error)
	// done, if set, is asked after every batch and every idle round, and
	// ends Run when it says so (replay).
	done func(ctx context.Context) (bool, error)
	// open is Run's first step: the streams and the consumer.
	open func(ctx context.Context) error
}

// Deps are what a Loader works with.
type Deps struct {
	Bus      *bus.Bus
	Store    Store
	Logger   *slog.Logger
	Registry prometheus.Registerer
}

// New returns a Loader of the shared durable consumer. It does no I/O:
// Run creates or updates the consumer first.
func New(cfg Config, d Deps) (*Loader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := newLoader(cfg, d)
	l.recreate = func(ctx context.Context) (jetstream.Consumer, error) {
		c, err := l.stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
			Durable:       cfg.Consumer,
			Description:   "pagewatch loaders: hits into ClickHouse",
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       cfg.AckWait,
			MaxAckPending: cfg.maxAckPending(),
			MaxDeliver:    -1,
		})
		if err != nil {
			return nil, fmt.Errorf("create consumer %s: %w", cfg.Consumer, err)
		}
		return c, nil
	}
	l.open = func(ctx context.Context) error {
		if err := l.openStreams(ctx); err != nil {
			return err
		}
		cons, err := l.recreate(ctx)
		if err != nil {
			return err
		}
		l.setConsumer(cons)
		return nil
	}
	return l, nil
}

func newLoader(cfg Config, d Deps) *Loader {
	return &Loader{
		cfg: cfg, bus: d.Bus, store: d.Store, logger: d.Logger,
		metrics: newMetrics(d.Registry), leans: newLeanList(cfg),
	}
}

// openStreams makes sure the hits and dead-letter streams exist.
func (l *Loader) openStreams(ctx context.Context) error {
	stream, err := l.bus.HitsStream(ctx)
	if err != nil {
		return err
	}
	if _, err := l.bus.DeadLetterStream(ctx); err != nil {
		return err
	}
	l.stream = stream
	return nil
}

func (l *Loader) consumer() jetstream.Consumer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cons
}

func (l *Loader) setConsumer(c jetstream.Consumer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cons = c
}

// Run loads until ctx is done. Messages of unfinished batches are handed
// back for redelivery, to this loader or another.
func (l *Loader) Run(ctx context.Context) error {
	if err := l.open(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The backlog it starts with, before it is consumed: a loader
	// restarted after a deploy shows what waited for it, which a sample
	// taken once consuming began could miss.
	l.sampleLag(ctx)
	go l.watchLag(ctx)

	handover := make(chan *batch) // unbuffered: bounds what a loader holds
	inserted := make(chan error, l.cfg.Inserts)
	for range l.cfg.Inserts {
		go func() {
			err := l.insertStage(ctx, handover)
			cancel(err) // a finished replay stops collecting too
			inserted <- err
		}()
	}
	cerr := l.collectStage(ctx, handover)
	cancel(cerr)
	close(handover)
	var errs []error
	for range l.cfg.Inserts {
		if err := <-inserted; err != nil && !errors.Is(err, errFinished) && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// finished asks done, if set, whether a replay is complete.
func (l *Loader) finished(ctx context.Context) bool {
	if l.done == nil {
		return false
	}
	fin, err := l.done(ctx)
	if err != nil && ctx.Err() == nil {
		l.logger.Warn("replay progress check failed", "err", err)
	}
	return fin
}

// errFinished ends a replay that loaded everything it was asked to.
var errFinished = errors.New("replay finished")

// collectStage fills batches and hands them to the insert stage until ctx
// ends. Fetch failures are retried with backoff; they never end the loader.
func (l *Loader) collectStage(ctx context.Context, handover chan<- *batch) error {
	failures := 0
	lost := false // the consumer was deleted and not yet recreated
	for ctx.Err() == nil {
		b, fetchErr := l.collect(ctx)
		if b == nil && fetchErr == nil && l.finished(ctx) {
			return errFinished
		}
		if b != nil {
			b.keepAlive(l.cfg.AckWait / 3)
			select {
			case handover <- b:
			case <-ctx.Done():
				b.giveBack()
			}
		}
		if fetchErr == nil || ctx.Err() != nil {
			failures = 0
			continue
		}
		l.metrics.fetchErrors.Inc()
		d := retry.Delay(failures, 100*time.Millisecond, min(l.cfg.RetryMax, 10*time.Second))
		failures++
		l.logger.Warn("fetch failed; retrying", "err", fetchErr, "attempt", failures, "retry_in", d.Round(time.Millisecond))
		if errors.Is(fetchErr, jetstream.ErrConsumerDeleted) || errors.Is(fetchErr, jetstream.ErrConsumerNotFound) {
			lost = true
		}
		// Once the consumer is gone, later fetches fail otherwise ("no
		// responders"), so keep recreating until it is back.
		if lost && l.recreate != nil {
			if c, err := l.recreate(ctx); err != nil {
				l.logger.Warn("recreate consumer failed; will retry", "err", err)
			} else {
				l.setConsumer(c)
				lost = false
			}
		}
		_ = retry.Sleep(ctx, d)
	}
	return nil
}

// insertStage inserts each batch it is handed, retrying until the store
// takes it, then acknowledges its messages. When ctx ends, what it holds
// goes back to JetStream.
func (l *Loader) insertStage(ctx context.Context, handover <-chan *batch) error {
	for b := range handover {
		if ctx.Err() != nil {
			b.giveBack()
			continue
		}
		if err := l.insert(ctx, b); err != nil {
			b.giveBack()
			continue
		}
		b.ack(l.logger)
		if l.finished(ctx) {
			return errFinished
		}
	}
	return nil
}
