// Package notify is the worker: it takes notification jobs from the work
// queue and mails each crossing once. A job goes through named steps:
//
//	decode → lock the page (or defer) → skip if already sent → send →
//	record in the sent ledger → ack
//
// and every outcome is written to the notifications history.
package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/pipeline/bus"
	"github.com/pagewatch/pagewatch/pipeline/crossing"
	"github.com/pagewatch/pagewatch/pipeline/lock"
	"github.com/pagewatch/pagewatch/pipeline/retry"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

// Mailer sends one notification.
type Mailer interface {
	Send(ctx context.Context, n mail.Notification) error
}

// Recorder keeps the notifications history.
type Recorder interface {
	RecordNotification(ctx context.Context, r crossing.Record) error
}

// Worker consumes notification jobs.
type Worker struct {
	cfg     Config
	cons    jetstream.Consumer
	locks   jetstream.KeyValue
	sent    jetstream.KeyValue
	mailer  Mailer
	history Recorder
	logger  *slog.Logger
	metrics *metrics
}

// New creates the consumer and buckets and returns a Worker.
func New(ctx context.Context, cfg Config, b *bus.Bus, mailer Mailer, history Recorder, logger *slog.Logger, reg prometheus.Registerer) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	stream, err := b.JobsStream(ctx)
	if err != nil {
		return nil, err
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       cfg.Consumer,
		Description:   "pagewatch workers: notification mails",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxDeliver:    -1,
		MaxAckPending: 10_000,
	})
	if err != nil {
		return nil, fmt.Errorf("create consumer %s: %w", cfg.Consumer, err)
	}
	locks, err := b.KV(ctx, bus.BucketLocks, cfg.LockTTL)
	if err != nil {
		return nil, err
	}
	sent, err := b.KV(ctx, bus.BucketSent, 0)
	if err != nil {
		return nil, err
	}
	return &Worker{cfg: cfg, cons: cons, locks: locks, sent: sent, mailer: mailer, history: history,
		logger: logger, metrics: newMetrics(reg)}, nil
}

// Run handles jobs until ctx is done, then lets in-flight jobs finish for
// up to DrainTimeout. Jobs not started are left for redelivery.
func (w *Worker) Run(ctx context.Context) error {
	jobCtx, cancelJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelJobs()
	var wg sync.WaitGroup
	for i := 0; i < w.cfg.Concurrency; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(ctx, jobCtx)
		}()
	}
	<-ctx.Done()
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(w.cfg.DrainTimeout):
		w.logger.Warn("drain timeout: abandoning in-flight jobs to redelivery")
		cancelJobs()
		<-drained
	}
	return nil
}

// loop fetches one job at a time, so a worker never holds jobs it is not
// working on (nothing waits behind a slow send, nothing is stranded on
// shutdown).
func (w *Worker) loop(ctx, jobCtx context.Context) {
	for ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		msg, err := w.cons.Next(jetstream.FetchContext(fctx))
		cancel()
		if err != nil {
			if ctx.Err() == nil && !idle(err) {
				w.logger.Warn("fetch job failed", "err", err)
				time.Sleep(time.Second)
			}
			continue
		}
		w.handle(jobCtx, msg)
	}
}

// idle reports whether a fetch error only means "no job arrived in time".
func idle(err error) bool {
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrNoMessages)
}

// handle runs one job through its steps.
func (w *Worker) handle(ctx context.Context, msg jetstream.Msg) {
	x, err := crossing.Unmarshal(msg.Data())
	if err != nil {
		w.logger.Error("undecodable job; terminating it", "subject", msg.Subject(), "err", err)
		_ = msg.TermWithReason(err.Error())
		w.metrics.jobs.WithLabelValues("invalid").Inc()
		return
	}
	log := w.logger.With("key", x.Key)

	// Step: lock the page, or defer the job without counting it as failed.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lease, err := lock.Acquire(ctx, w.locks, bus.Key(x.Site, x.Path), w.cfg.Name, w.cfg.LockTTL, cancel)
	if errors.Is(err, lock.ErrLocked) {
		w.deferJob(ctx, msg, x)
		return
	}
	if err != nil {
		log.Warn("lock failed; job will be redelivered", "err", err)
		_ = msg.NakWithDelay(w.cfg.DeferDelay)
		return
	}
	defer func() {
		if err := lease.Release(context.WithoutCancel(ctx)); err != nil {
			log.Warn("release lock", "err", err)
		}
	}()

	// Step: skip a crossing that was already mailed.
	if _, err := w.sent.Get(ctx, x.Key); err == nil {
		w.finish(ctx, msg, x, crossing.Record{Outcome: crossing.Duplicate})
		return
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		log.Warn("read sent ledger failed; job will be redelivered", "err", err)
		_ = msg.NakWithDelay(w.cfg.DeferDelay)
		return
	}

	// Step: send.
	start := time.Now()
	err = w.mailer.Send(ctx, mail.Notification{
		Key: x.Key, Rule: x.Rule, Site: x.Site, Path: x.Path, Count: x.Count, Threshold: x.Threshold,
		Window: x.Window, CrossedAt: x.CrossedAt, Recipients: x.Recipients,
	})
	w.metrics.sendSeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		w.sendFailed(ctx, msg, x, err)
		return
	}

	// Step: record it as sent, under the lock, before the ack.
	if err := w.recordSent(ctx, x); err != nil {
		// The mail went out; a redelivery would send it again. Keep the
		// job unacknowledged so a later attempt can still write the
		// ledger; its Message-ID makes a repeat recognisable.
		log.Error("mail sent but the sent ledger write failed", "err", err)
		_ = msg.NakWithDelay(w.cfg.DeferDelay)
		return
	}
	w.finish(ctx, msg, x, crossing.Record{Outcome: crossing.Sent})
	log.Info("notification sent", "rule", x.Rule, "recipients", len(x.Recipients))
}

func (w *Worker) deferJob(ctx context.Context, msg jetstream.Msg, x crossing.Crossing) {
	// Jitter keeps deferred jobs for one page from coming back together.
	d := w.cfg.DeferDelay/2 + time.Duration(rand.Int64N(int64(w.cfg.DeferDelay)))
	_ = msg.NakWithDelay(d)
	w.metrics.lockConflicts.Inc()
	w.metrics.jobs.WithLabelValues(string(crossing.Deferred)).Inc()
	w.record(ctx, x, crossing.Record{Outcome: crossing.Deferred})
}

func (w *Worker) sendFailed(ctx context.Context, msg jetstream.Msg, x crossing.Crossing, err error) {
	rec := crossing.Record{Outcome: crossing.Failed, SMTPCode: mail.SMTPCode(err), Error: err.Error()}
	w.metrics.jobs.WithLabelValues(string(crossing.Failed)).Inc()
	w.record(ctx, x, rec)
	if mail.IsPermanent(err) {
		w.logger.Error("send failed permanently; job terminated", "key", x.Key, "smtp_code", rec.SMTPCode, "err", err)
		_ = msg.TermWithReason(fmt.Sprintf("smtp %d", rec.SMTPCode))
		return
	}
	attempt := 1
	if meta, err := msg.Metadata(); err == nil {
		attempt = int(meta.NumDelivered)
	}
	d := retry.Delay(attempt, time.Second, 5*time.Minute)
	w.logger.Warn("send failed; will retry", "key", x.Key, "smtp_code", rec.SMTPCode, "attempt", attempt, "retry_in", d, "err", err)
	_ = msg.NakWithDelay(d)
}

type sentEntry struct {
	At        time.Time `json:"at"`
	Worker    string    `json:"worker"`
	MessageID string    `json:"message_id"`
}

func (w *Worker) recordSent(ctx context.Context, x crossing.Crossing) error {
	body, _ := json.Marshal(sentEntry{At: time.Now().UTC(), Worker: w.cfg.Name, MessageID: mail.MessageID(x.Key)})
	// The mail is out: the ledger write must not be cut short by a lost
	// lease or a shutdown, or the crossing would be mailed again.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if _, err = w.sent.Put(ctx, x.Key, body); err == nil {
			return nil
		}
		_ = retry.Sleep(ctx, retry.Delay(attempt, 100*time.Millisecond, 5*time.Second))
	}
	return fmt.Errorf("write sent ledger %s: %w", x.Key, err)
}

func (w *Worker) finish(ctx context.Context, msg jetstream.Msg, x crossing.Crossing, rec crossing.Record) {
	if err := msg.DoubleAck(ctx); err != nil {
		// The ledger holds the crossing, so a redelivery ends as a duplicate.
		w.logger.Warn("ack failed", "key", x.Key, "err", err)
	}
	w.metrics.jobs.WithLabelValues(string(rec.Outcome)).Inc()
	w.record(ctx, x, rec)
}

// record writes the history; a failure is logged, never fatal to the job.
func (w *Worker) record(ctx context.Context, x crossing.Crossing, rec crossing.Record) {
	rec.At, rec.Crossing, rec.Worker = time.Now(), x, w.cfg.Name
	if err := w.history.RecordNotification(context.WithoutCancel(ctx), rec); err != nil {
		w.logger.Warn("record notification history", "key", x.Key, "outcome", rec.Outcome, "err", err)
	}
}
