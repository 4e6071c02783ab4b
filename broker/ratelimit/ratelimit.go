// Package ratelimit spaces out sends across every worker: a GCRA limiter
// whose state, one theoretical arrival time (TAT) per limited thing, lives
// in a NATS KV bucket and is moved with revision-checked writes. Two
// workers racing for a slot both read revision r; one writes r+1, the
// other's write is refused, it reads again and takes the next slot. A slot
// is never handed out twice and no lock is held between sends.
//
// Every request is granted a slot; the answer is when. Reserve claims the
// next slot and says how long to wait; TryReserve claims it only if the
// wait is short enough, so a worker can defer a job or fold it into a
// digest instead of sleeping for an hour; Peek only looks.
//
// Time. TATs are absolute wall-clock times and each worker computes with
// its own clock: the limiter assumes the workers' clocks agree within a
// small skew (NTP: milliseconds). The slots themselves always obey the
// limit; a worker whose clock is off sends at its slot by its own clock,
// so if the clocks spread over d, any window may see up to d*rate sends
// beyond the limit (0.006 for 20 per hour and d = 1s). A clock far ahead
// also pushes TAT forward when it writes, so the others wait longer than
// needed until real time catches up. Using the NATS server's clock instead would cost a round
// trip per reservation to learn it, so the skew is measured rather than
// corrected: every state carries its writer's clock, every entry the
// server's, and the difference is exported
// (pagewatch_ratelimit_clock_skew_seconds) and logged above 1s.
//
// Failure. Nothing is granted without a write to NATS: when NATS is down,
// Reserve fails (by ctx's deadline, or the client's request timeout) and
// the caller must not send; jobs stay in JetStream and the limit holds.
// The limiter fails closed.
//
// Unused slots. A slot claimed and then not used (the send failed, ctx
// ended during Wait, the reply to the write was lost and the caller tried again)
// is capacity lost, not a send too many: the limit is an upper bound that
// errs towards sending less. While sends queue, each lost slot delays the
// ones behind it by one interval; when they do not, it costs nothing.
//
// Bucket. Keys are few (one global, one per configured recipient), so the
// bucket needs no TTL. If it has one, it must exceed the longest wait that
// is ever claimed, or a queued TAT could lapse and let a burst through.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/broker/retry"
)

// KV is the part of a jetstream.KeyValue the limiter uses.
type KV interface {
	Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error)
	Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error)
	Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error)
}

// Key names one limited thing. Name labels the metrics, so it must come
// from a short fixed list; ID tells apart the things under one name.
type Key struct {
	Name string
	ID   string
}

// Global is the key of the limit every worker shares.
func Global() Key { return Key{Name: "global"} }

// Recipient is the key of one address's limit. The address is reduced to
// its lower-cased addr-spec ("Ops <OPS@example.com>" and "ops@example.com"
// share a limit: for a limit, merging is the safe mistake) and hashed, so
// any address makes a valid KV key.
func Recipient(addr string) Key {
	if a, err := mail.ParseAddress(addr); err == nil {
		addr = a.Address
	}
	return Key{Name: "rcpt", ID: bus.Key(strings.ToLower(strings.TrimSpace(addr)))}
}

// String is the KV key: "name" or "name.id".
func (k Key) String() string {
	if k.ID == "" {
		return k.Name
	}
	return k.Name + "." + k.ID
}

// Slot is a granted (or, from Peek and a declined TryReserve, a possible)
// send time.
type Slot struct {
	// At is when the send may happen, on the limiter's clock.
	At time.Time
	// Wait is At minus the time the slot was computed: 0 means now.
	Wait time.Duration
}

// skewWarn is the clock skew between a writer and the NATS server above
// which the limiter says so: well above NTP's milliseconds, well below
// anything that would matter for per-recipient limits.
const skewWarn = time.Second

// Limiter grants slots. It is safe for concurrent use; one per process
// is enough, however many limits and workers.
type Limiter struct {
	kv     KV
	log    *slog.Logger
	m      *metrics
	clock  func() time.Time
	warned atomic.Int64 // unix seconds of the last skew warning
}

// New returns a limiter keeping its state in kv (a bucket from
// bus.Bus.KV, ttl 0). clock is nil in production (time.Now); tests pass a
// fake one. Metrics are registered on reg.
func New(kv KV, logger *slog.Logger, reg prometheus.Registerer, clock func() time.Time) *Limiter {
	if clock == nil {
		clock = time.Now
	}
	return &Limiter{kv: kv, log: logger, m: newMetrics(reg), clock: clock}
}

// Reserve claims the next slot of limit l on key k and returns it. The
// caller sends at slot.At (after sleeping slot.Wait), or loses the slot.
func (lim *Limiter) Reserve(ctx context.Context, k Key, l Limit) (Slot, error) {
	s, _, err := lim.reserve(ctx, k, l, true, -1)
	return s, err
}

// TryReserve claims the next slot only if its wait is at most maxWait.
// Otherwise it claims nothing and returns ok false with the slot a claim
// would have got, so the caller can defer the job by about that long or
// fold it into a digest.
func (lim *Limiter) TryReserve(ctx context.Context, k Key, l Limit, maxWait time.Duration) (slot Slot, ok bool, err error) {
	maxWait = max(maxWait, 0) // negative means "no bound" inside
	return lim.reserve(ctx, k, l, true, maxWait)
}

// Peek returns the slot Reserve would claim now, without claiming it.
func (lim *Limiter) Peek(ctx context.Context, k Key, l Limit) (Slot, error) {
	s, _, err := lim.reserve(ctx, k, l, false, 0)
	return s, err
}

// Wait claims the next slot and sleeps until it. If ctx ends first, the
// slot is lost (see the package comment) and ctx's error returned.
func (lim *Limiter) Wait(ctx context.Context, k Key, l Limit) error {
	s, err := lim.Reserve(ctx, k, l)
	if err != nil {
		return err
	}
	if s.Wait <= 0 {
		return nil
	}
	if err := retry.Sleep(ctx, s.Wait); err != nil {
		return fmt.Errorf("wait for rate limit %s: %w", k, err)
	}
	return nil
}

// reserve is the CAS loop. maxWait < 0 means no bound.
func (lim *Limiter) reserve(ctx context.Context, k Key, l Limit, claim bool, maxWait time.Duration) (Slot, bool, error) {
	if l.Off() {
		return Slot{At: lim.now()}, true, nil
	}
	key := k.String()
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return Slot{}, false, fmt.Errorf("rate limit %s: %w", key, err)
		}
		tat, rev, err := lim.load(ctx, key, l)
		if err != nil {
			lim.failed(ctx, k)
			return Slot{}, false, err
		}
		// Read after the Get: a write that lands was computed with a clock
		// reading later than the state it replaces was written.
		now := lim.now()
		at, next := schedule(tat, now, l)
		slot := Slot{At: at, Wait: at.Sub(now)}
		if !claim {
			return slot, false, nil
		}
		if maxWait >= 0 && slot.Wait > maxWait {
			lim.m.reservations.WithLabelValues(k.Name, "declined").Inc()
			return slot, false, nil
		}
		body := state{TAT: next, Now: now}.encode()
		if rev == 0 {
			_, err = lim.kv.Create(ctx, key, body)
		} else {
			_, err = lim.kv.Update(ctx, key, body, rev)
		}
		if err == nil {
			lim.m.reservations.WithLabelValues(k.Name, "claimed").Inc()
			lim.m.waits.WithLabelValues(k.Name).Observe(slot.Wait.Seconds())
			return slot, true, nil
		}
		if !conflict(err) {
			lim.failed(ctx, k)
			return Slot{}, false, fmt.Errorf("rate limit %s: claim slot: %w", key, err)
		}
		// Another worker took the slot we computed; read again. The first
		// retry is immediate (the usual case is one rival), later ones
		// back off with jitter so a crowd does not retry in step.
		lim.m.conflicts.WithLabelValues(k.Name).Inc()
		if attempt > 0 {
			if err := retry.Sleep(ctx, retry.Delay(attempt-1, 500*time.Microsecond, 50*time.Millisecond)); err != nil {
				return Slot{}, false, fmt.Errorf("rate limit %s: %w", key, err)
			}
		}
	}
}

// failed counts a request that NATS did not answer, unless the caller
// gave up first.
func (lim *Limiter) failed(ctx context.Context, k Key) {
	if !errors.Is(ctx.Err(), context.Canceled) {
		lim.m.errors.WithLabelValues(k.Name).Inc()
	}
}

// conflict reports a refused revision-checked write: Create on a key that
// exists (ErrKeyExists) or Update on a stale revision
// (ErrKeyRevisionMismatch; nats.go maps both "wrong last sequence" codes,
// 10071 and 10164 of replicated streams, to it).
func conflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}

// load returns the stored TAT and its revision; a missing key is the zero
// time at revision 0.
func (lim *Limiter) load(ctx context.Context, key string, l Limit) (time.Time, uint64, error) {
	e, err := lim.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return time.Time{}, 0, nil
	}
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("rate limit %s: read state: %w", key, err)
	}
	st, err := decodeState(e.Value())
	if err != nil {
		// Only this package writes the bucket, so this is a person's
		// edit or a bug. Refusing would stop all mail until someone
		// repaired it; instead act as if the whole burst had just been
		// spent, which can only send less.
		now := lim.now()
		lim.log.Warn("unreadable rate limit state; treating the burst as spent", "key", key, "err", err)
		return now.Add(time.Duration(l.Burst) * l.interval()), e.Revision(), nil
	}
	lim.checkSkew(key, e.Created().Sub(st.Now))
	return st.TAT, e.Revision(), nil
}

// checkSkew records how far a writer's clock was behind the server's when
// it wrote (plus the write's one-way latency, a millisecond or less).
func (lim *Limiter) checkSkew(key string, skew time.Duration) {
	lim.m.skew.Observe(skew.Abs().Seconds())
	if skew.Abs() < skewWarn {
		return
	}
	now := time.Now().Unix()
	last := lim.warned.Load()
	if now-last >= 60 && lim.warned.CompareAndSwap(last, now) {
		lim.log.Warn("a worker's clock differs from the NATS server's; rate limits assume synchronised clocks",
			"key", key, "server_minus_writer", skew.Round(time.Millisecond))
	}
}

// now is the wall clock without Go's monotonic reading: TATs are compared
// across processes, where only the wall clock means anything.
func (lim *Limiter) now() time.Time { return lim.clock().Round(0) }
