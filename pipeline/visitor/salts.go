package visitor

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/broker/retry"
)

// Bucket is the salts bucket, as given to bus.Bus.KV: its JetStream name
// is nats.prefix + "_visitor_salts".
const Bucket = "visitor_salts"

// SaltTTL is the bucket's TTL (its stream's MaxAge): a salt is deleted
// this long after it was stored. Two days, so the salt of a day made at
// its first minute outlives the day and the lines of it that arrive late
// (a tailer catching up after an outage), and is gone the day after.
const SaltTTL = 48 * time.Hour

// SaltBytes is the length of a salt.
const SaltBytes = 32

// maxDays bounds the salts a process holds: today and yesterday while
// following live files, plus the days that backfills are reading (each
// reads its lines in order, so one or two days at a time).
const maxDays = 8

// Salts gives the salt of a UTC day, the same to every tailer: it reads
// it from the bucket, or makes it and stores it there if no tailer has
// yet (the first writer wins, the others read what it wrote). The salts
// in use are held in memory, each until the bucket deletes it.
//
// Salts is safe for concurrent use; one per process is enough. NewSalts
// does no I/O: the bucket is opened (created if need be) on first use.
type Salts struct {
	bucket *bus.LazyKV
	m      *metrics
	now    func() time.Time

	mu      sync.Mutex
	days    map[int64]*salt   // by day number (days since 1970-01-01 UTC)
	flights map[int64]*flight // fetches under way, so one per day goes to NATS
}

// salt is a day's salt as SipHash's key. Immutable but for dropped and
// timer.
type salt struct {
	day    int64
	k0, k1 uint64
	// expires is when the bucket deletes this salt, or a little before.
	expires time.Time
	// dropped is set once Salts has forgotten the salt (expired, or
	// pushed out by other days): a Keyer holding it asks again rather
	// than go on using it.
	dropped atomic.Bool
	timer   *time.Timer // forgets the salt at expires; guarded by Salts.mu
}

type flight struct {
	done chan struct{}
	s    *salt
	err  error
}

// NewSalts returns the salts kept in b's bucket. clock is nil in
// production (time.Now); tests pass a fake one. It decides only when a
// salt held in memory is forgotten; which day's salt a line gets is the
// line's own time. Metrics are registered on reg.
func NewSalts(b *bus.Bus, reg prometheus.Registerer, clock func() time.Time) *Salts {
	if clock == nil {
		clock = time.Now
	}
	return &Salts{
		bucket:  b.Lazy(Bucket, SaltTTL),
		m:       newMetrics(reg),
		now:     clock,
		days:    map[int64]*salt{},
		flights: map[int64]*flight{},
	}
}

// get returns the salt of day, from memory or from NATS. Callers asking
// for one day at once share one fetch; a caller whose ctx ends stops
// waiting, and the others go on with their own.
func (s *Salts) get(ctx context.Context, day int64) (*salt, error) {
	for {
		s.mu.Lock()
		if e, ok := s.days[day]; ok {
			if s.now().Before(e.expires) {
				s.mu.Unlock()
				return e, nil
			}
			// Its timer is due; the Keyers holding it ask again anyway.
			s.forget(e)
		}
		f, busy := s.flights[day]
		if !busy {
			f = &flight{done: make(chan struct{})}
			s.flights[day] = f
			s.mu.Unlock()
			f.s, f.err = s.fetch(ctx, day)
			s.mu.Lock()
			delete(s.flights, day)
			if f.err == nil {
				s.keep(f.s)
			}
			s.mu.Unlock()
			close(f.done)
			return f.s, f.err
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("visitor: salt of %s: %w", dayKey(day), ctx.Err())
		case <-f.done:
		}
		// The fetching caller's ctx ending is no answer for this one.
		if f.err == nil || ctx.Err() != nil || !isContextErr(f.err) {
			return f.s, f.err
		}
	}
}

// keep holds e in memory until it expires, and at most maxDays days:
// beyond that the oldest day other than e's is forgotten (it is fetched
// again if a line of it comes). Called with s.mu held.
func (s *Salts) keep(e *salt) {
	now := s.now()
	for _, old := range s.days {
		if !now.Before(old.expires) {
			s.forget(old)
		}
	}
	s.days[e.day] = e
	for len(s.days) > maxDays {
		oldest := e
		for _, old := range s.days {
			if old != e && (oldest == e || old.day < oldest.day) {
				oldest = old
			}
		}
		s.forget(oldest)
	}
	// A process that goes quiet still forgets a salt when the bucket
	// does, rather than at its next lookup.
	e.timer = time.AfterFunc(e.expires.Sub(now), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.forget(e)
	})
}

// forget drops e from memory; Keyers holding it ask again. Called with
// s.mu held.
func (s *Salts) forget(e *salt) {
	if s.days[e.day] == e {
		delete(s.days, e.day)
	}
	e.dropped.Store(true)
	if e.timer != nil {
		e.timer.Stop()
	}
}

// fetch reads day's salt from the bucket, or makes it, retrying what
// NATS may answer differently soon (no answer in time, no JetStream
// leader for the moment) until ctx ends.
func (s *Salts) fetch(ctx context.Context, day int64) (*salt, error) {
	key := dayKey(day)
	for attempt := 0; ; attempt++ {
		e, err := s.fetchOnce(ctx, day, key)
		if err == nil {
			return e, nil
		}
		if ctx.Err() == nil && transient(err) {
			err = retry.Sleep(ctx, retry.Delay(attempt, 50*time.Millisecond, 2*time.Second))
			if err == nil {
				continue
			}
		}
		// A caller that gave up (shutdown) is no NATS error.
		if !errors.Is(ctx.Err(), context.Canceled) {
			s.m.fetchErrors.Inc()
		}
		return nil, fmt.Errorf("visitor: salt of %s: %w", key, err)
	}
}

// fetchOnce is one Get, and if the key is missing, one Create and, if
// another tailer created it first, one more Get.
func (s *Salts) fetchOnce(ctx context.Context, day int64, key string) (*salt, error) {
	kv, err := s.bucket.Get(ctx)
	if err != nil {
		return nil, err
	}
	got, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		value := make([]byte, SaltBytes)
		_, _ = rand.Read(value) // never fails (crypto/rand panics instead)
		// Read before the write: the entry is stored later, so the bucket
		// deletes it no sooner than this plus the TTL.
		before := s.now()
		_, err = kv.Create(ctx, key, value)
		if err == nil {
			s.m.created.Inc()
			return newSalt(day, value, before.Add(SaltTTL))
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, fmt.Errorf("create: %w", err)
		}
		got, err = kv.Get(ctx, key)
	}
	if err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	return newSalt(day, got.Value(), got.Created().Add(SaltTTL))
}

func newSalt(day int64, value []byte, expires time.Time) (*salt, error) {
	if len(value) != SaltBytes {
		// Only this package writes the bucket: this is a person's edit.
		return nil, fmt.Errorf("stored salt is %d bytes, want %d (delete the key from bucket %s to have a new one made)", len(value), SaltBytes, Bucket)
	}
	// SipHash's key is 128 bits: the salt's two halves XORed.
	le := binary.LittleEndian
	return &salt{
		day:     day,
		k0:      le.Uint64(value[0:]) ^ le.Uint64(value[16:]),
		k1:      le.Uint64(value[8:]) ^ le.Uint64(value[24:]),
		expires: expires,
	}, nil
}

// jetstream's ErrorCode for JSClusterNotAvailErr (503): no meta leader,
// for the few seconds until a new one is elected.
const clusterNotAvailable jetstream.ErrorCode = 10008

// transient: no answer in time (NATS down or reconnecting; jetstream
// bounds each request by 5 s when ctx has no deadline), nobody listening
// yet, or a cluster between leaders. The bus retries the same when it
// creates buckets. Anything else (refused permissions, a malformed salt)
// fails at once.
func transient(err error) bool {
	var api *jetstream.APIError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		(errors.As(err, &api) && api.ErrorCode == clusterNotAvailable)
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// dayOf is t's UTC day as a number: days since 1970-01-01.
func dayOf(t time.Time) int64 {
	sec := t.Unix()
	d := sec / 86400
	if sec%86400 < 0 {
		d--
	}
	return d
}

// dayKey is the bucket key of a day: "2026-11-28".
func dayKey(day int64) string { return time.Unix(day*86400, 0).UTC().Format(time.DateOnly) }
