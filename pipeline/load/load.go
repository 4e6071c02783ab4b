// Package load moves hits from JetStream into ClickHouse in large batches,
// acknowledging messages only after their insert succeeded. Any number of
// loaders share one durable consumer. A batch that is delivered again (a
// loader killed between insert and ack) is inserted again, and the store
// makes that harmless: rows are keyed by stream sequence and line offset.
package load

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/pipeline/bus"
	"github.com/pagewatch/pagewatch/pipeline/hit"
	"github.com/pagewatch/pagewatch/pipeline/retry"
)

// Config is the `ingest.load:` section.
type Config struct {
	Listen   string `yaml:"listen"`
	Consumer string `yaml:"consumer"`
	// A batch is inserted when it holds BatchRows hits or its first
	// message is BatchAge old, whichever comes first.
	BatchRows int           `yaml:"batch_rows"`
	BatchAge  time.Duration `yaml:"batch_age"`
	// AckWait is how long a message may stay unacknowledged before
	// JetStream gives it to another loader; slow inserts are kept alive
	// with progress acks, so this bounds how long a dead loader delays them.
	AckWait time.Duration `yaml:"ack_wait"`
}

// DefaultConfig returns the defaults documented in deploy/pagewatch.example.yaml.
func DefaultConfig() Config {
	return Config{
		Listen:    "127.0.0.1:9102",
		Consumer:  "loader",
		BatchRows: 100_000,
		BatchAge:  time.Second,
		AckWait:   30 * time.Second,
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
	if c.BatchAge <= 0 {
		errs = append(errs, fmt.Errorf("ingest.load.batch_age: must be positive, got %s", c.BatchAge))
	}
	if c.AckWait < 5*time.Second || c.AckWait < 2*c.BatchAge {
		errs = append(errs, fmt.Errorf("ingest.load.ack_wait: must be at least 5s and twice ingest.load.batch_age (%s), got %s", c.BatchAge, c.AckWait))
	}
	return errors.Join(errs...)
}

// Store receives batches of hits; inserting the same batch twice must not
// change any count.
type Store interface {
	InsertHits(ctx context.Context, batches []hit.Batch) error
}

// Loader is one loading process's share of the consumer.
type Loader struct {
	cfg     Config
	stream  jetstream.Stream
	cons    jetstream.Consumer
	store   Store
	logger  *slog.Logger
	metrics *metrics
}

// New creates or updates the durable consumer and returns a Loader.
func New(ctx context.Context, cfg Config, b *bus.Bus, store Store, logger *slog.Logger, reg prometheus.Registerer) (*Loader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	stream, err := b.HitsStream(ctx)
	if err != nil {
		return nil, err
	}
	l := &Loader{cfg: cfg, stream: stream, store: store, logger: logger, metrics: newMetrics(reg)}
	if err := l.ensureConsumer(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// ensureConsumer creates the durable consumer, or updates it to this
// loader's settings; also how a loader recovers a deleted consumer.
func (l *Loader) ensureConsumer(ctx context.Context) error {
	cons, err := l.stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:     l.cfg.Consumer,
		Description: "pagewatch loaders: hits into ClickHouse",
		AckPolicy:   jetstream.AckExplicitPolicy,
		AckWait:     l.cfg.AckWait,
		// Enough outstanding messages for a full batch from small tailer
		// messages, and for several loaders at once.
		MaxAckPending: max(10_000, l.cfg.BatchRows/10),
		MaxDeliver:    -1,
	})
	if err != nil {
		return fmt.Errorf("create consumer %s: %w", l.cfg.Consumer, err)
	}
	l.cons = cons
	return nil
}

// Run loads until ctx is done. Messages of an unfinished batch are left
// for redelivery, to this loader or another.
func (l *Loader) Run(ctx context.Context) error {
	failures := 0
	for ctx.Err() == nil {
		msgs, batches, rows, fetchErr := l.collect(ctx)
		if len(msgs) > 0 {
			if err := l.insert(ctx, msgs, batches, rows); err != nil {
				// Only ctx ending stops insert's retries: hand the batch
				// back now rather than after AckWait.
				for _, m := range msgs {
					_ = m.Nak()
				}
				break
			}
			l.ack(msgs)
		}
		if fetchErr == nil || ctx.Err() != nil {
			failures = 0
			continue
		}
		l.metrics.fetchErrors.Inc()
		d := retry.Delay(failures, 100*time.Millisecond, 10*time.Second)
		failures++
		l.logger.Warn("fetch failed; retrying", "err", fetchErr, "attempt", failures, "retry_in", d.Round(time.Millisecond))
		if errors.Is(fetchErr, jetstream.ErrConsumerDeleted) || errors.Is(fetchErr, jetstream.ErrConsumerNotFound) {
			if err := l.ensureConsumer(ctx); err != nil {
				l.logger.Warn("recreate consumer failed", "err", err)
			}
		}
		_ = retry.Sleep(ctx, d)
	}
	return nil
}

// collect fetches messages until the batch is full or old enough. A fetch
// error ends the batch early; what was collected is still returned.
func (l *Loader) collect(ctx context.Context) (msgs []jetstream.Msg, batches []hit.Batch, rows int, err error) {
	var deadline time.Time
	seen := map[uint64]bool{}
	for rows < l.cfg.BatchRows {
		wait := l.cfg.BatchAge
		if !deadline.IsZero() {
			wait = time.Until(deadline)
			if wait <= 0 {
				break
			}
		}
		fctx, cancel := context.WithTimeout(ctx, max(wait, 20*time.Millisecond))
		fetched, err := l.cons.Fetch(min(1000, l.cfg.BatchRows), jetstream.FetchContext(fctx))
		if err != nil {
			cancel()
			return msgs, batches, rows, err
		}
		for m := range fetched.Messages() {
			if deadline.IsZero() {
				deadline = time.Now().Add(l.cfg.BatchAge)
			}
			b, ok := l.decode(m)
			if !ok {
				continue
			}
			if seen[b.Seq] {
				// Redelivered while we were still collecting: one copy per
				// insert, or its per-minute counts would add up twice.
				continue
			}
			seen[b.Seq] = true
			msgs = append(msgs, m)
			batches = append(batches, b)
			rows += len(b.Hits)
		}
		cancel()
		if ctx.Err() != nil {
			return msgs, batches, rows, ctx.Err()
		}
		if err := fetched.Error(); err != nil && !idle(err) {
			return msgs, batches, rows, err
		}
		if deadline.IsZero() {
			return msgs, batches, rows, nil // nothing arrived: go round again
		}
	}
	return msgs, batches, rows, nil
}

// idle reports whether a fetch error only means "nothing arrived in time".
func idle(err error) bool {
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrNoMessages)
}

// decode turns a message into a batch; a message that is not one is
// terminated, since no number of redeliveries would make it readable.
func (l *Loader) decode(m jetstream.Msg) (hit.Batch, bool) {
	meta, err := m.Metadata()
	if err != nil {
		l.logger.Error("message without metadata; terminating it", "subject", m.Subject(), "err", err)
		_ = m.Term()
		l.metrics.deadLetters.Inc()
		return hit.Batch{}, false
	}
	if meta.NumDelivered > 1 {
		l.metrics.redeliveries.Inc()
	}
	hits, err := hit.Decode(m.Data(), nil)
	if err != nil {
		l.logger.Error("undecodable hits message; terminating it", "subject", m.Subject(), "seq", meta.Sequence.Stream, "err", err)
		_ = m.TermWithReason(err.Error())
		l.metrics.deadLetters.Inc()
		return hit.Batch{}, false
	}
	return hit.Batch{Seq: meta.Sequence.Stream, Hits: hits}, true
}

// insert retries until the store takes the batch or ctx ends; meanwhile
// the messages are kept from redelivery with progress acks, and nothing
// more is fetched (JetStream is the buffer).
func (l *Loader) insert(ctx context.Context, msgs []jetstream.Msg, batches []hit.Batch, rows int) error {
	// Keep the messages ours for as long as the insert and its retries
	// take, so a slow or down ClickHouse does not cause redeliveries.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(l.cfg.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				for _, m := range msgs {
					_ = m.InProgress()
				}
			}
		}
	}()
	for attempt := 0; ; attempt++ {
		start := time.Now()
		err := l.store.InsertHits(ctx, batches)
		if err == nil {
			l.metrics.insertSeconds.Observe(time.Since(start).Seconds())
			l.metrics.rows.Add(float64(rows))
			l.metrics.batches.Inc()
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		l.metrics.insertErrors.Inc()
		d := retry.Delay(attempt, 100*time.Millisecond, 30*time.Second)
		l.logger.Warn("insert failed; retrying", "err", err, "rows", rows, "messages", len(msgs), "attempt", attempt+1, "retry_in", d.Round(time.Millisecond))
		if err := retry.Sleep(ctx, d); err != nil {
			return err
		}
	}
}

func (l *Loader) ack(msgs []jetstream.Msg) {
	for _, m := range msgs {
		// A lost ack only means a redelivery, which the store absorbs.
		if err := m.Ack(); err != nil {
			l.logger.Warn("ack failed; the message will be delivered again", "err", err)
		}
	}
}
