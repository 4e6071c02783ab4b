// Package notify is the worker: it takes notification jobs from the work
// queue and delivers each crossing once to each receiver the routing
// names (email, webhooks, chat). Jobs are grouped by page and pages are
// taken in turn site by site (schedule); a runner locks a page, or hands
// its jobs to the worker process holding the page's lock (handoff.go), or
// defers them, and then takes each of the page's jobs through named steps:
//
//	silenced? → route → for each receiver (deliver.go's deliverySteps):
//	receiver known → ledger → quiet hours → describe → unsubscribed →
//	rate limits → claim → send → record → ack once every receiver is done
//
// and every outcome is written to the notifications history.
package notify

import (
	"context"
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
	"github.com/pagewatch/pagewatch/pipeline/ledger"
	"github.com/pagewatch/pagewatch/pipeline/links"
	"github.com/pagewatch/pagewatch/pipeline/silence"
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
	Bus *bus.Bus // the jobs, the lock, sent-ledger and rate-limit buckets, hand-offs
	// Receivers are the configured receivers. Empty: one, named "email"
	// (DefaultReceiver), made of Mailers.
	Receivers []ReceiverSpec
	Mailers   NewMailer // one Mailer per runner, when Receivers is empty
	History   Recorder  // the notifications history (ClickHouse)
	// Stats draws the chart and lists the referrers in each mail. Nil:
	// mails go without them.
	Stats    Stats
	Logger   *slog.Logger
	Registry prometheus.Registerer
	// Silences and Unsubscribes are the stores the worker shares with its
	// HTTP APIs. Nil: the worker makes its own.
	Silences     *silence.Store
	Unsubscribes *links.Unsubscribes
	// Clock is nil in production (time.Now); tests of quiet hours pass
	// their own.
	Clock func() time.Time
	// Limiter grants the shared rate limits' slots (NewLimiter); the
	// worker's reports use the same one. Nil: the worker makes its own.
	Limiter *ratelimit.Limiter
}

// NewLimiter is a process's one rate limiter, over the shared limits'
// bucket (opened on first use: no I/O here).
func NewLimiter(b *bus.Bus, logger *slog.Logger, reg prometheus.Registerer) *ratelimit.Limiter {
	return ratelimit.New(b.Lazy(bus.BucketRateLimits, 0).Entries(), logger, reg, nil)
}

// Worker consumes notification jobs. Its parts each hold what they need:
// claims (the sent ledger), limits (the shared rate limits), handoffs
// (jobs to and from other worker processes), digests (quiet hours) and
// out (metrics and history); steps is the path of each delivery.
type Worker struct {
	cfg    Config
	bus    *bus.Bus
	cons   jetstream.Consumer
	locks  jetstream.KeyValue
	held   jetstream.KeyValue
	specs  []ReceiverSpec
	spec   map[string]ReceiverSpec
	steps  []step // deliverySteps, composed once
	now    func() time.Time
	logger *slog.Logger

	silences *silence.Store
	unsubs   *links.Unsubscribes
	signer   *links.Signer // nil: no links in mails
	stats    Stats         // nil: mails without chart and referrers

	claims   *claims
	limits   *limits
	handoffs *handoffs
	digests  *digests
	out      *outcomes
	hist     *history // batches history writes while Run runs
	metrics  *metrics
	// cancelDrainOver ends claims' retried writes when a shutdown's
	// drain_timeout has passed.
	cancelDrainOver context.CancelFunc
}

// New returns a Worker. It does no I/O: Run creates the consumer and
// opens the buckets as its first step (open).
func New(cfg Config, deps Deps) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b, logger, reg := deps.Bus, deps.Logger, deps.Registry
	silences, unsubs := deps.Silences, deps.Unsubscribes
	if silences == nil {
		silences = silence.New(b, logger)
	}
	if unsubs == nil {
		unsubs = links.NewUnsubscribes(b)
	}
	specs := deps.Receivers
	if len(specs) == 0 {
		mailers := deps.Mailers
		specs = []ReceiverSpec{{Name: DefaultReceiver, Kind: KindEmail, GiveUpAfter: DefaultGiveUpAfter,
			Open: func() (Receiver, error) { return mailers() }}}
	}
	if err := validateSpecs(specs); err != nil {
		return nil, err
	}
	spec := map[string]ReceiverSpec{}
	names := make([]string, len(specs))
	for i, s := range specs {
		if s.GiveUpAfter <= 0 {
			s.GiveUpAfter = DefaultGiveUpAfter
			specs[i] = s
		}
		spec[s.Name], names[i] = s, s.Name
	}
	if err := cfg.Routing.Validate("worker.routing", names); err != nil {
		return nil, err
	}
	now := deps.Clock
	if now == nil {
		now = time.Now
	}
	drainOver, cancelDrainOver := context.WithCancel(context.Background())
	w := &Worker{cfg: cfg, silences: silences, unsubs: unsubs, signer: links.NewSigner(cfg.Links), bus: b, specs: specs, spec: spec, now: now,
		stats: deps.Stats, hist: newHistory(deps.History, logger), cancelDrainOver: cancelDrainOver,
		logger: logger, metrics: newMetrics(reg, names)}
	w.out = &outcomes{hist: w.hist, metrics: w.metrics, worker: cfg.Name}
	limiter := deps.Limiter
	if limiter == nil {
		limiter = NewLimiter(b, logger, reg)
	}
	w.limits = &limits{limiter: limiter, email: cfg.RateLimit, ackWait: cfg.AckWait, deferDelay: cfg.DeferDelay, out: w.out, logger: logger}
	w.handoffs = &handoffs{bus: b, worker: cfg.Name, out: w.out, logger: logger}
	w.claims = &claims{ledger: ledger.New(b), worker: cfg.Name, ackWait: cfg.AckWait, now: now, logger: logger, drainOver: drainOver}
	w.digests = &digests{specs: specs, worker: cfg.Name, lockTTL: cfg.LockTTL, claims: w.claims,
		limits: w.limits, unsubs: unsubs, out: w.out, now: now, logger: logger}
	w.steps = w.deliverySteps()
	return w, nil
}

// open creates the jobs stream and the shared consumer, and opens the
// buckets: the page locks, the sent ledger and the held crossings of
// quiet hours; then hands each to the part that keeps it. (The rate
// limits' bucket opens on the limiter's first use.)
func (w *Worker) open(ctx context.Context) error {
	cfg, b := w.cfg, w.bus
	stream, err := b.JobsStream(ctx)
	if err != nil {
		return err
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
		return fmt.Errorf("create consumer %s: %w", cfg.Consumer, err)
	}
	locks, err := b.KV(ctx, bus.BucketLocks, cfg.LockTTL)
	if err != nil {
		return err
	}
	if err := w.claims.ledger.Open(ctx); err != nil {
		return err
	}
	held, err := b.KV(ctx, bus.BucketHeld, 0)
	if err != nil {
		return err
	}
	if _, err := b.DeadLetterStream(ctx); err != nil {
		return err
	}
	w.cons, w.locks, w.held = cons, locks, held
	w.digests.held, w.digests.locks = held, locks
	return nil
}

// Run handles jobs until ctx is done, then lets in-flight jobs finish for
// up to DrainTimeout. Jobs not started are handed back for redelivery.
//
// One fetcher keeps up to Prefetch jobs in hand, grouped by page, and
// Concurrency runners each take a page, lock it, and run its jobs one
// after another (see schedule).
func (w *Worker) Run(ctx context.Context) error {
	if err := w.open(ctx); err != nil {
		return err
	}
	s := newSchedule(w.cfg.Prefetch)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if err := w.silences.Watch(watchCtx); err != nil {
		return err
	}
	go w.silences.Maintain(watchCtx, silencePurgeEvery)
	// Other worker processes hand us jobs for pages we have locked.
	sub, err := w.bus.Conn.Subscribe(w.bus.HandoffSubject(w.cfg.Name), w.handoffs.answer(s))
	if err != nil {
		return fmt.Errorf("subscribe to hand-offs: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	runners := make([]runnerReceivers, w.cfg.Concurrency)
	for i := range runners {
		rs, err := w.openReceivers()
		if err != nil {
			for _, open := range runners[:i] {
				closeReceivers(open)
			}
			return fmt.Errorf("runner %d of %d: %w", i+1, len(runners), err)
		}
		runners[i] = rs
	}
	go w.hist.run()
	defer w.hist.close()
	jobCtx, cancelJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelJobs()
	go s.keepAlive(jobCtx, w.cfg.AckWait/3)
	digests := make(chan struct{})
	go func() { defer close(digests); w.digests.run(ctx) }()
	defer func() { <-digests }()
	fetched := make(chan struct{})
	go func() {
		defer close(fetched)
		w.fetch(ctx, s)
	}()
	var wg sync.WaitGroup
	for _, rs := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer closeReceivers(rs)
			for page := s.nextPage(); page != ""; page = s.nextPage() {
				w.runPage(ctx, jobCtx, s, page, rs)
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
		w.cancelDrainOver()
		cancelJobs()
		<-drained
	}
	return nil
}

// silencePurgeEvery is how often a worker deletes long-ended silences.
const silencePurgeEvery = time.Hour

// shallowPrefetch is how many jobs a worker holds while no rate limit
// holds its sends back (see Config.Prefetch), and throttledFor how long a
// wait for a slot keeps it looking deep.
const (
	shallowPrefetch = 256
	throttledFor    = 30 * time.Second
)

// fetch keeps the schedule supplied with up to Prefetch jobs while sends
// are throttled, and up to shallowPrefetch otherwise: deep enough to see
// past one site's backlog when one builds up, without hoarding a queue
// that other worker processes could drain alongside.
func (w *Worker) fetch(ctx context.Context, s *schedule) {
	for ctx.Err() == nil {
		n := s.space()
		if deep := w.cfg.Prefetch; deep > shallowPrefetch && !w.limits.throttledWithin(throttledFor) {
			n -= deep - shallowPrefetch
		}
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
	// ErrBatchCompleted is the server saying it sent the whole batch
	// (nats-server in a cluster answers a fetch with it): not a failure,
	// and backing off on it stalls the fetch loop.
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, jetstream.ErrNoMessages) || errors.Is(err, jetstream.ErrBatchCompleted)
}

// maxTurn is how many of a page's jobs a runner takes in one turn.
const maxTurn = 32

// runPage is one runner's turn on a page: lock it, or hand its jobs to
// the worker process that holds the lock, or else defer them without
// counting them as failed; then run its jobs, including any that arrive
// meanwhile, under the one lock.
func (w *Worker) runPage(ctx, jobCtx context.Context, s *schedule, page string, rs runnerReceivers) {
	defer s.finish(page) // after the release below: defers run last first
	pctx, cancel := context.WithCancel(jobCtx)
	defer cancel()
	lease, err := lock.Acquire(pctx, w.locks, page, w.cfg.Name, w.cfg.LockTTL, cancel)
	for attempt := 1; errors.Is(err, lock.ErrLocked); attempt++ {
		var held *lock.HeldError
		if errors.As(err, &held) && w.handoffs.offerPage(jobCtx, s, page, held.Holder) {
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
	for turn := 0; ; {
		if ctx.Err() != nil || pctx.Err() != nil {
			// Shutting down, or the lease was lost: hand the rest back.
			for _, j := range s.takeAll(page) {
				_ = j.msg.Nak()
			}
			return
		}
		if turn == maxTurn {
			// Give the other sites a turn; the page is ready again
			// behind them (finish) and is locked afresh.
			return
		}
		j, ok := s.pop(page)
		if !ok {
			return
		}
		turn++
		w.handle(pctx, j.msg, j.x, rs)
	}
}

func (w *Worker) deferJob(msg jetstream.Msg, x crossing.Crossing) {
	// Jitter keeps deferred jobs for one page from coming back together.
	d := w.cfg.DeferDelay/2 + time.Duration(rand.Int64N(int64(w.cfg.DeferDelay)))
	_ = msg.NakWithDelay(d)
	w.metrics.lockConflicts.Inc()
	w.metrics.jobs.WithLabelValues(string(crossing.Deferred)).Inc()
	w.out.record(x, crossing.Record{Outcome: crossing.Deferred})
}
