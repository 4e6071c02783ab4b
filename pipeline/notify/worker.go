// Package notify is the worker: it takes notification jobs from the work
// queue and mails each crossing once. Jobs are grouped by page (schedule);
// a runner locks a page, or hands its jobs to the worker process holding
// the page's lock (handoff.go), or defers them, and then takes each of the
// page's jobs through named steps:
//
//	skip if already sent → describe (chart, referrers) → wait for the
//	rate limits → send → record in the sent ledger → ack
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

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/broker/lock"
	"github.com/pagewatch/pagewatch/broker/ratelimit"
	"github.com/pagewatch/pagewatch/broker/retry"
	"github.com/pagewatch/pagewatch/domain/crossing"
)

// Mailer sends notifications, one at a time, over a connection it keeps.
type Mailer interface {
	Send(ctx context.Context, n Notification) error
	Close() error
}

// NewMailer opens a Mailer. A worker opens one per runner, so its runners
// send at the same time, each over its own reused connection.
type NewMailer func() (Mailer, error)

// Deps are what a Worker works with.
type Deps struct {
	Bus     *bus.Bus  // the jobs, the lock, sent-ledger and rate-limit buckets, hand-offs
	Mailers NewMailer // one Mailer per runner
	History Recorder  // the notifications history (ClickHouse)
	// Stats draws the chart and lists the referrers in each mail. Nil:
	// mails go without them.
	Stats    Stats
	Logger   *slog.Logger
	Registry prometheus.Registerer
}

// Worker consumes notification jobs.
type Worker struct {
	cfg     Config
	cons    jetstream.Consumer
	locks   jetstream.KeyValue
	sent    jetstream.KeyValue
	limiter *ratelimit.Limiter
	bus     *bus.Bus
	mailers NewMailer
	stats   Stats    // nil: mails without chart and referrers
	hist    *history // batches history writes while Run runs
	logger  *slog.Logger
	metrics *metrics
}

// New creates the consumer and buckets and returns a Worker.
func New(ctx context.Context, cfg Config, deps Deps) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b, logger, reg := deps.Bus, deps.Logger, deps.Registry
	stream, err := b.JobsStream(ctx)
	if err != nil {
		return nil, err
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:     cfg.Consumer,
		Description: "pagewatch workers: notification mails",
		AckPolicy:   jetstream.AckExplicitPolicy,
		AckWait:     cfg.AckWait,
		MaxDeliver:  -1,
		// Room for every worker process's prefetch.
		MaxAckPending: max(10_000, 8*cfg.Prefetch),
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
	limits, err := b.KV(ctx, bus.BucketRateLimits, 0)
	if err != nil {
		return nil, err
	}
	if _, err := b.DeadLetterStream(ctx); err != nil {
		return nil, err
	}
	return &Worker{cfg: cfg, cons: cons, locks: locks, sent: sent, bus: b, mailers: deps.Mailers, stats: deps.Stats,
		hist:    newHistory(deps.History, logger),
		limiter: ratelimit.New(limits, logger, reg, nil), logger: logger, metrics: newMetrics(reg)}, nil
}

// Run handles jobs until ctx is done, then lets in-flight jobs finish for
// up to DrainTimeout. Jobs not started are handed back for redelivery.
//
// One fetcher keeps up to Prefetch jobs in hand, grouped by page, and
// Concurrency runners each take a page, lock it, and run its jobs one
// after another (see schedule).
func (w *Worker) Run(ctx context.Context) error {
	s := newSchedule(w.cfg.Prefetch)
	// Other worker processes hand us jobs for pages we have locked.
	sub, err := w.bus.Conn.Subscribe(w.bus.HandoffSubject(w.cfg.Name), w.onHandoff(s))
	if err != nil {
		return fmt.Errorf("subscribe to hand-offs: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	mailers := make([]Mailer, w.cfg.Concurrency)
	for i := range mailers {
		m, err := w.mailers()
		if err != nil {
			for _, open := range mailers[:i] {
				_ = open.Close()
			}
			return fmt.Errorf("open mailer %d of %d: %w", i+1, len(mailers), err)
		}
		mailers[i] = m
	}
	go w.hist.run()
	defer w.hist.close()
	jobCtx, cancelJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelJobs()
	go s.keepAlive(jobCtx, w.cfg.AckWait/3)
	fetched := make(chan struct{})
	go func() {
		defer close(fetched)
		w.fetch(ctx, s)
	}()
	var wg sync.WaitGroup
	for _, m := range mailers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer m.Close()
			for page := s.nextPage(); page != ""; page = s.nextPage() {
				w.runPage(ctx, jobCtx, s, page, m)
			}
		}()
	}
	<-ctx.Done()
	<-fetched
	for _, j := range s.close() {
		_ = j.msg.Nak()
	}
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

// fetch keeps the schedule supplied with up to Prefetch jobs.
func (w *Worker) fetch(ctx context.Context, s *schedule) {
	for ctx.Err() == nil {
		n := s.space()
		if n <= 0 {
			s.waitRoom(ctx)
			continue
		}
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		batch, err := w.cons.Fetch(min(n, 256), jetstream.FetchContext(fctx))
		if err != nil {
			cancel()
			w.fetchFailed(ctx, err)
			continue
		}
		for msg := range batch.Messages() {
			if ctx.Err() != nil {
				_ = msg.Nak() // arrived as we stopped: straight back
				continue
			}
			x, err := crossing.Unmarshal(msg.Data())
			if err != nil {
				w.logger.Error("undecodable job; terminating it", "subject", msg.Subject(), "err", err)
				_ = msg.TermWithReason(err.Error())
				w.metrics.jobs.WithLabelValues("invalid").Inc()
				continue
			}
			s.add(bus.Key(x.Site, x.Path), job{msg: msg, x: x})
		}
		cancel()
		w.fetchFailed(ctx, batch.Error())
	}
}

func (w *Worker) fetchFailed(ctx context.Context, err error) {
	if err == nil || ctx.Err() != nil || idle(err) {
		return
	}
	w.logger.Warn("fetch jobs failed", "err", err)
	_ = retry.Sleep(ctx, time.Second)
}

// idle reports whether a fetch error only means "no job arrived in time".
func idle(err error) bool {
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrNoMessages)
}

// runPage is one runner's turn on a page: lock it, or hand its jobs to
// the worker process that holds the lock, or else defer them without
// counting them as failed; then run its jobs, including any that arrive
// meanwhile, under the one lock.
func (w *Worker) runPage(ctx, jobCtx context.Context, s *schedule, page string, m Mailer) {
	defer s.finish(page) // after the release below: defers run last first
	pctx, cancel := context.WithCancel(jobCtx)
	defer cancel()
	lease, err := lock.Acquire(pctx, w.locks, page, w.cfg.Name, w.cfg.LockTTL, cancel)
	for attempt := 1; errors.Is(err, lock.ErrLocked); attempt++ {
		var held *lock.HeldError
		if errors.As(err, &held) && w.handOff(jobCtx, s, page, held.Holder) {
			return
		}
		if attempt > handoffAttempts {
			break
		}
		// Refused or not possible: the holder may be letting go of the
		// page, so try the lock again shortly.
		time.Sleep(time.Duration(attempt) * 2 * time.Millisecond)
		lease, err = lock.Acquire(pctx, w.locks, page, w.cfg.Name, w.cfg.LockTTL, cancel)
	}
	if errors.Is(err, lock.ErrLocked) {
		for _, j := range s.takeAll(page) {
			w.deferJob(j.msg, j.x)
		}
		return
	}
	if err != nil {
		w.logger.Warn("lock failed; jobs will be redelivered", "page", page, "err", err)
		for _, j := range s.takeAll(page) {
			_ = j.msg.NakWithDelay(w.cfg.DeferDelay)
		}
		return
	}
	defer func() {
		if err := lease.Release(context.WithoutCancel(pctx)); err != nil {
			w.logger.Warn("release lock", "page", page, "err", err)
		}
	}()
	for {
		if ctx.Err() != nil || pctx.Err() != nil {
			// Shutting down, or the lease was lost: hand the rest back.
			for _, j := range s.takeAll(page) {
				_ = j.msg.Nak()
			}
			return
		}
		j, ok := s.pop(page)
		if !ok {
			return
		}
		w.handle(pctx, j.msg, j.x, m)
	}
}

// handle runs one job of a locked page through its steps.
func (w *Worker) handle(ctx context.Context, msg jetstream.Msg, x crossing.Crossing, m Mailer) {
	log := w.logger.With("key", x.Key)

	// Step: skip a crossing that was already mailed.
	if _, err := w.sent.Get(ctx, x.Key); err == nil {
		w.finish(ctx, msg, x, crossing.Record{Outcome: crossing.Duplicate})
		return
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		log.Warn("read sent ledger failed; job will be redelivered", "err", err)
		_ = msg.NakWithDelay(w.cfg.DeferDelay)
		return
	}

	// Step: gather the chart and referrers, then wait for the rate
	// limits' slots, claimed last so they are used at once.
	n := w.describe(ctx, x)
	if !w.awaitSlot(ctx, msg, x) {
		return
	}

	// Step: send.
	start := time.Now()
	err := m.Send(ctx, n)
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

func (w *Worker) deferJob(msg jetstream.Msg, x crossing.Crossing) {
	// Jitter keeps deferred jobs for one page from coming back together.
	d := w.cfg.DeferDelay/2 + time.Duration(rand.Int64N(int64(w.cfg.DeferDelay)))
	_ = msg.NakWithDelay(d)
	w.metrics.lockConflicts.Inc()
	w.metrics.jobs.WithLabelValues(string(crossing.Deferred)).Inc()
	w.record(x, crossing.Record{Outcome: crossing.Deferred})
}

func (w *Worker) sendFailed(ctx context.Context, msg jetstream.Msg, x crossing.Crossing, err error) {
	rec := crossing.Record{Outcome: crossing.Failed, SMTPCode: smtpCode(err), Error: err.Error()}
	w.metrics.jobs.WithLabelValues(string(crossing.Failed)).Inc()
	w.record(x, rec)
	if isPermanent(err) {
		w.deadLetter(ctx, msg, x, rec)
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
	body, _ := json.Marshal(sentEntry{At: time.Now().UTC(), Worker: w.cfg.Name, MessageID: crossing.MessageID(x.Key)})
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
	// Not DoubleAck: the ledger already holds the crossing, so an ack
	// lost on the way ends as a duplicate on redelivery, never a second
	// mail, and waiting for the server's confirmation would slow each job.
	if err := msg.Ack(); err != nil {
		w.logger.Warn("ack failed", "key", x.Key, "err", err)
	}
	w.metrics.jobs.WithLabelValues(string(rec.Outcome)).Inc()
	w.record(x, rec)
}

// record queues an outcome for the history; it never fails the job.
func (w *Worker) record(x crossing.Crossing, rec crossing.Record) {
	rec.At, rec.Crossing, rec.Worker = time.Now(), x, w.cfg.Name
	w.hist.add(rec)
}
