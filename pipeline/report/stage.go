package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"

	"github.com/pagewatch/pagewatch/broker/retry"
	"github.com/pagewatch/pagewatch/domain/traffic"
)

// Counts reads page counts (sinks/clickhouse's WindowCounts).
type Counts interface {
	WindowCounts(ctx context.Context, q traffic.WindowQuery) ([]traffic.PageCount, error)
}

// Sealed is optionally implemented by Counts (sinks/clickhouse): the
// day boundary before which daily totals are complete, so reports read
// old days from them instead of from every minute.
type Sealed interface {
	SealedBefore(ctx context.Context, before time.Time) (time.Time, error)
}

// Deliverer sends a report to one receiver; to are the spec's addresses
// for an email receiver (empty: the receiver's own).
type Deliverer interface {
	DeliverReport(ctx context.Context, receiver string, to []string, r Report) error
}

// Deps are what the stage works with.
type Deps struct {
	Counts  Counts
	Deliver Deliverer
	// Claims is the NATS KV bucket (bus.BucketReports) in which each
	// (report, period, receiver) is claimed by the worker that sends it.
	Claims   jetstream.KeyValue
	Name     string // this process, in claims
	Logger   *slog.Logger
	Registry prometheus.Registerer
	Clock    func() time.Time // nil: time.Now
}

// Stage sends the configured reports on their schedules.
type Stage struct {
	specs []Spec
	locs  map[string]*time.Location
	deps  Deps
	now   func() time.Time
	sent  *prometheus.CounterVec
	// Retries bounds the attempts at one delivery; RetryBase is the first
	// wait between them.
	Retries   int
	RetryBase time.Duration
}

// claimTimeout is how long a claim in state sending keeps others off: a
// worker that died mid-send leaves one, and another takes it over after.
const claimTimeout = 10 * time.Minute

// New checks the specs (receivers are checked by the config) and returns
// the stage.
func New(specs []Spec, deps Deps) (*Stage, error) {
	s := &Stage{deps: deps, locs: map[string]*time.Location{}, now: deps.Clock, Retries: 6, RetryBase: 30 * time.Second}
	if s.now == nil {
		s.now = time.Now
	}
	if s.deps.Logger == nil {
		s.deps.Logger = slog.New(slog.DiscardHandler)
	}
	for _, sp := range specs {
		sp = sp.WithDefaults()
		loc, err := time.LoadLocation(sp.Zone)
		if err != nil {
			return nil, fmt.Errorf("report %s: zone: %w", sp.Name, err)
		}
		s.locs[sp.Name] = loc
		s.specs = append(s.specs, sp)
	}
	s.sent = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pagewatch_worker_reports_total",
		Help: "Scheduled report deliveries, by outcome: sent; elsewhere (another worker claimed it); failed (an attempt failed; retried); given_up.",
	}, []string{"outcome"})
	for _, o := range []string{"sent", "elsewhere", "failed", "given_up"} {
		s.sent.WithLabelValues(o)
	}
	if deps.Registry != nil {
		deps.Registry.MustRegister(s.sent)
	}
	return s, nil
}

// Run sends each report on its schedule until ctx ends.
func (s *Stage) Run(ctx context.Context) error {
	if len(s.specs) == 0 {
		<-ctx.Done()
		return nil
	}
	c := cron.New(cron.WithChain(cron.Recover(cron.DiscardLogger)))
	for _, sp := range s.specs {
		sched, err := sp.schedule(s.locs[sp.Name])
		if err != nil {
			return fmt.Errorf("report %s: schedule: %w", sp.Name, err)
		}
		c.Schedule(sched, cron.FuncJob(func() {
			if _, err := s.Send(ctx, sp.Name, s.now()); err != nil && ctx.Err() == nil {
				s.deps.Logger.Error("report not sent", "report", sp.Name, "err", err)
			}
		}))
	}
	c.Start()
	var wg sync.WaitGroup
	s.catchUp(ctx, &wg)
	<-ctx.Done()
	<-c.Stop().Done()
	wg.Wait()
	return nil
}

// catchUpWithin is how late a report whose firing no worker was running
// for is still sent when a worker starts.
const catchUpWithin = 6 * time.Hour

// catchUp sends, at start, each report whose last period's firing was
// missed (no worker ran then) if it was less than catchUpWithin ago; the
// claims keep one already sent from going again.
func (s *Stage) catchUp(ctx context.Context, wg *sync.WaitGroup) {
	now := s.now()
	for _, sp := range s.specs {
		sched, err := sp.schedule(s.locs[sp.Name])
		if err != nil {
			continue
		}
		cur, _ := periodsAt(sp.Period, now, s.locs[sp.Name])
		fired := sched.Next(cur.To.Add(-time.Second))
		if fired.After(now) || now.Sub(fired) > catchUpWithin {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Send(ctx, sp.Name, now); err != nil && ctx.Err() == nil {
				s.deps.Logger.Error("report not sent", "report", sp.Name, "err", err)
			}
		}()
	}
}

// Build reads the counts and builds the report named name for the last
// whole period before at.
func (s *Stage) Build(ctx context.Context, name string, at time.Time) (Report, error) {
	sp, ok := s.spec(name)
	if !ok {
		return Report{}, fmt.Errorf("no report named %q", name)
	}
	loc := s.locs[name]
	cur, prev := periodsAt(sp.Period, at, loc)
	bs := buckets(sp.Period, cur, loc)
	starts := append([]time.Time{prev.From}, bs...)
	var sealed time.Time
	if sl, ok := s.deps.Counts.(Sealed); ok {
		var err error
		if sealed, err = sl.SealedBefore(ctx, cur.To); err != nil {
			return Report{}, fmt.Errorf("report %s: sealed days: %w", name, err)
		}
	}
	periods, err := s.deps.Counts.WindowCounts(ctx, traffic.WindowQuery{Sites: []string{sp.Site}, Starts: starts, End: cur.To, SealedBefore: sealed})
	if err != nil {
		return Report{}, fmt.Errorf("report %s: counts: %w", name, err)
	}
	var alltime []traffic.PageCount
	if len(sp.Milestones) > 0 {
		floor := sp.Milestones[0]
		for _, m := range sp.Milestones {
			floor = min(floor, m)
		}
		alltime, err = s.deps.Counts.WindowCounts(ctx, traffic.WindowQuery{Sites: []string{sp.Site}, Starts: []time.Time{{}, cur.From}, End: cur.To, SealedBefore: sealed, Floor: floor - 1})
		if err != nil {
			return Report{}, fmt.Errorf("report %s: all-time counts: %w", name, err)
		}
	}
	return build(sp, cur, prev, bs, periods, alltime), nil
}

// Send builds the report for the period before at and delivers it to
// each of its receivers that no worker has claimed for the period. sent
// counts the receivers this call delivered to.
func (s *Stage) Send(ctx context.Context, name string, at time.Time) (sent int, err error) {
	sp, ok := s.spec(name)
	if !ok {
		return 0, fmt.Errorf("no report named %q", name)
	}
	var r *Report
	var errs []error
	for _, recv := range sp.Receivers {
		ok, err := s.deliver(ctx, sp, recv, at, &r)
		if err != nil {
			errs = append(errs, fmt.Errorf("receiver %s: %w", recv, err))
		}
		if ok {
			sent++
		}
	}
	return sent, errors.Join(errs...)
}

// deliver claims the (report, period, receiver) and sends it, retrying a
// failure a few times; the report is built once, on first need.
func (s *Stage) deliver(ctx context.Context, sp Spec, recv string, at time.Time, r **Report) (bool, error) {
	cur, _ := periodsAt(sp.Period, at, s.locs[sp.Name])
	key := Key(sp.Name, cur.From) + "." + recv
	log := s.deps.Logger.With("report", sp.Name, "receiver", recv, "period", cur.From.Format(time.DateOnly))
	var err error
	for attempt := 0; attempt < max(s.Retries, 1); attempt++ {
		if attempt > 0 {
			if err := retry.Sleep(ctx, retry.Delay(attempt-1, s.RetryBase, 10*time.Minute)); err != nil {
				return false, err
			}
		}
		var rev uint64
		var claimed bool
		claimed, rev, err = s.claim(ctx, key)
		if err != nil {
			continue
		}
		if !claimed {
			s.sent.WithLabelValues("elsewhere").Inc()
			log.Info("report claimed by another worker")
			return false, nil
		}
		if *r == nil {
			var rep Report
			if rep, err = s.Build(ctx, sp.Name, at); err != nil {
				s.release(ctx, key, rev)
				s.sent.WithLabelValues("failed").Inc()
				log.Warn("report build failed; will retry", "attempt", attempt+1, "err", err)
				continue
			}
			*r = &rep
		}
		if err = s.deps.Deliver.DeliverReport(ctx, recv, sp.To, **r); err != nil {
			s.release(ctx, key, rev)
			s.sent.WithLabelValues("failed").Inc()
			log.Warn("report delivery failed; will retry", "attempt", attempt+1, "err", err)
			continue
		}
		if _, err := s.deps.Claims.Update(context.WithoutCancel(ctx), key, s.claimValue("sent"), rev); err != nil {
			log.Warn("report sent but not marked sent; its claim lapses in "+claimTimeout.String(), "err", err)
		}
		s.sent.WithLabelValues("sent").Inc()
		log.Info("report sent", "pages", len((*r).Pages), "views", (*r).Total)
		return true, nil
	}
	s.sent.WithLabelValues("given_up").Inc()
	return false, err
}

type claimEntry struct {
	State  string    `json:"state"` // sending, sent
	Worker string    `json:"worker"`
	At     time.Time `json:"at"`
}

func (s *Stage) claimValue(state string) []byte {
	b, _ := json.Marshal(claimEntry{State: state, Worker: s.deps.Name, At: s.now().UTC()})
	return b
}

// claim takes key for this worker: created, or taken over from a sender
// that has not finished within claimTimeout.
func (s *Stage) claim(ctx context.Context, key string) (ok bool, rev uint64, err error) {
	rev, err = s.deps.Claims.Create(ctx, key, s.claimValue("sending"))
	if err == nil {
		return true, rev, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return false, 0, fmt.Errorf("claim %s: %w", key, err)
	}
	e, err := s.deps.Claims.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return s.claim(ctx, key) // released meanwhile
	}
	if err != nil {
		return false, 0, fmt.Errorf("read claim %s: %w", key, err)
	}
	var c claimEntry
	_ = json.Unmarshal(e.Value(), &c)
	if c.State == "sent" || s.now().Sub(c.At) < claimTimeout {
		return false, 0, nil
	}
	rev, err = s.deps.Claims.Update(ctx, key, s.claimValue("sending"), e.Revision())
	if err != nil {
		return false, 0, nil // another worker took it over first
	}
	return true, rev, nil
}

// release gives a claim up after a failure, so a retry (here or
// elsewhere) may send.
func (s *Stage) release(ctx context.Context, key string, rev uint64) {
	_ = s.deps.Claims.Delete(context.WithoutCancel(ctx), key, jetstream.LastRevision(rev))
}

func (s *Stage) spec(name string) (Spec, bool) {
	for _, sp := range s.specs {
		if sp.Name == name {
			return sp, true
		}
	}
	return Spec{}, false
}

// Specs are the configured reports, with defaults filled in.
func (s *Stage) Specs() []Spec { return s.specs }
