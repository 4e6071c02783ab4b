// Package silence keeps the silences: a silence stops the crossings it matches (site, rule, page
// glob, labels) between its start and end. A silenced crossing is not
// sent; it is recorded in the history as "silenced" and its job acked,
// so nothing is lost and nothing comes back. Silences live in NATS KV,
// one key per silence, shared by every worker; each worker keeps them in
// memory through a KV watch. Expiring a silence sets its end to now: it
// stays listed (with --all) as a record of what was silenced when.
//
// The package owns the silences bucket: the worker, its HTTP API and the
// console read and write silences only through Store.
package silence

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/crossing"
)

// Silence is one silence, as stored and as the API shows it.
type Silence struct {
	ID        string         `json:"id"`
	Match     crossing.Match `json:"match"`
	StartsAt  time.Time      `json:"starts_at"`
	EndsAt    time.Time      `json:"ends_at"`
	Author    string         `json:"author"`
	Comment   string         `json:"comment,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
}

// Limits on a silence's texts and on how many are kept.
const (
	maxSilenceText = 1024
	maxSilences    = 10_000
)

// MaxFor is the longest a silence may last, and the furthest ahead it may
// start: a silence is a pause, and one made by mistake or by a forged
// request must end on its own.
const MaxFor = 30 * 24 * time.Hour

// KeepEnded is how long an ended silence stays listed (as a record of
// what was silenced when) before Purge deletes it.
const KeepEnded = 7 * 24 * time.Hour

// ErrNotFound is returned for an ID no silence has.
var ErrNotFound = errors.New("no such silence")

// idRE is what a silence ID may be: it is a KV key. IDs made here are 16
// hex digits; the rest of the range is what earlier versions accepted.
var idRE = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// Active reports whether s silences at t.
func (s Silence) Active(t time.Time) bool { return !t.Before(s.StartsAt) && t.Before(s.EndsAt) }

// Validate checks a silence as given by a person (CLI or API).
func (s Silence) Validate() error {
	var errs []error
	m := s.Match
	if m.Site == "" && m.Rule == "" && m.Page == "" && len(m.Labels) == 0 {
		errs = append(errs, errors.New("match: at least one of site, rule, page, labels must be set"))
	}
	if err := m.Validate("match"); err != nil {
		errs = append(errs, err)
	}
	if s.StartsAt.IsZero() || s.EndsAt.IsZero() {
		errs = append(errs, errors.New("starts_at and ends_at: must be set"))
	} else if !s.EndsAt.After(s.StartsAt) {
		errs = append(errs, fmt.Errorf("ends_at (%s) must be after starts_at (%s)", s.EndsAt.Format(time.RFC3339), s.StartsAt.Format(time.RFC3339)))
	}
	if strings.TrimSpace(s.Author) == "" {
		errs = append(errs, errors.New("author: must be set"))
	}
	if len(s.Author) > maxSilenceText || len(s.Comment) > maxSilenceText || len(m.Site) > maxSilenceText || len(m.Rule) > maxSilenceText {
		errs = append(errs, fmt.Errorf("author, comment, site and rule: at most %d bytes each", maxSilenceText))
	}
	if len(m.Labels) > 32 {
		errs = append(errs, errors.New("match.labels: at most 32"))
	}
	return errors.Join(errs...)
}

// Store is the silence store. Add, List and Expire read and write
// NATS KV; Match answers from memory, kept current by Watch. New does no
// I/O: the bucket is opened (created if need be) on first use.
type Store struct {
	bucket *bus.LazyKV
	log    *slog.Logger

	mu    sync.RWMutex
	cache map[string]Silence
}

// New returns the store of the silences in b's bucket. logger nil: none.
func New(b *bus.Bus, logger *slog.Logger) *Store {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Store{bucket: b.Lazy(bus.BucketSilences, 0), log: logger, cache: map[string]Silence{}}
}

// Open returns a store whose bucket is open: for commands that want a
// NATS problem reported at once.
func Open(ctx context.Context, b *bus.Bus, logger *slog.Logger) (*Store, error) {
	s := New(b, logger)
	if _, err := s.kv(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Store) kv(ctx context.Context) (jetstream.KeyValue, error) { return s.bucket.Get(ctx) }

// Add stores a new silence and returns it with its ID. CreatedAt is now;
// a zero StartsAt means now.
func (s *Store) Add(ctx context.Context, sl Silence, now time.Time) (Silence, error) {
	kv, err := s.kv(ctx)
	if err != nil {
		return Silence{}, err
	}
	sl.CreatedAt = now.UTC()
	if sl.StartsAt.IsZero() {
		sl.StartsAt = sl.CreatedAt
	}
	if err := sl.Validate(); err != nil {
		return Silence{}, err
	}
	if !sl.EndsAt.After(now) {
		return Silence{}, fmt.Errorf("ends_at (%s) is not in the future", sl.EndsAt.Format(time.RFC3339))
	}
	from := sl.StartsAt
	if from.Before(now) {
		from = now
	}
	if sl.StartsAt.Sub(now) > MaxFor || sl.EndsAt.Sub(from) > MaxFor {
		return Silence{}, fmt.Errorf("a silence may start at most %s ahead and last at most %s", MaxFor, MaxFor)
	}
	given := sl.ID != ""
	if given && !idRE.MatchString(sl.ID) {
		return Silence{}, fmt.Errorf("id: must match %s", idRE)
	}
	if st, err := kv.Status(ctx); err == nil && st.Values() >= maxSilences {
		return Silence{}, fmt.Errorf("%d silences are stored: the most kept", maxSilences)
	}
	if !given {
		var id [8]byte
		_, _ = rand.Read(id[:])
		sl.ID = hex.EncodeToString(id[:])
	}
	sl.StartsAt, sl.EndsAt = sl.StartsAt.UTC(), sl.EndsAt.UTC()
	body, _ := json.Marshal(sl)
	if _, err := kv.Create(ctx, sl.ID, body); err != nil {
		if given && errors.Is(err, jetstream.ErrKeyExists) {
			// Added before under this ID (a snooze link used twice):
			// the first stands, unchanged.
			return s.get(ctx, kv, sl.ID)
		}
		return Silence{}, fmt.Errorf("store silence: %w", err)
	}
	s.put(sl)
	return sl, nil
}

func (s *Store) get(ctx context.Context, kv jetstream.KeyValue, id string) (Silence, error) {
	e, err := kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Silence{}, ErrNotFound
	}
	if err != nil {
		return Silence{}, fmt.Errorf("read silence %s: %w", id, err)
	}
	var sl Silence
	if err := json.Unmarshal(e.Value(), &sl); err != nil {
		return Silence{}, fmt.Errorf("read silence %s: %w", id, err)
	}
	return sl, nil
}

// Purge deletes the silences that ended more than KeepEnded before now,
// and the markers their deletes leave, so that ended silences never fill
// the store; it returns how many it deleted.
func (s *Store) Purge(ctx context.Context, now time.Time) (int, error) {
	all, err := s.List(ctx)
	if err != nil {
		return 0, err
	}
	kv, err := s.kv(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, sl := range all {
		if now.Sub(sl.EndsAt) <= KeepEnded {
			continue
		}
		if err := kv.Purge(ctx, sl.ID); err != nil {
			return n, fmt.Errorf("purge silence %s: %w", sl.ID, err)
		}
		n++
	}
	if n > 0 {
		if err := kv.PurgeDeletes(ctx, jetstream.DeleteMarkersOlderThan(-1)); err != nil {
			return n, fmt.Errorf("purge silences' delete markers: %w", err)
		}
	}
	return n, nil
}

// Maintain purges ended silences every interval until ctx ends.
func (s *Store) Maintain(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if n, err := s.Purge(ctx, time.Now()); err != nil && ctx.Err() == nil {
			s.log.Warn("purging ended silences failed; will retry", "err", err)
		} else if n > 0 {
			s.log.Info("purged ended silences", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// List returns every stored silence, the latest ending first.
func (s *Store) List(ctx context.Context) ([]Silence, error) {
	kv, err := s.kv(ctx)
	if err != nil {
		return nil, err
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("list silences: %w", err)
	}
	var out []Silence
	for k := range keys.Keys() {
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read silence %s: %w", k, err)
		}
		var sl Silence
		if err := json.Unmarshal(e.Value(), &sl); err != nil {
			continue
		}
		out = append(out, sl)
	}
	slices.SortFunc(out, func(a, b Silence) int { return b.EndsAt.Compare(a.EndsAt) })
	return out, nil
}

// Expire ends a silence now (one already ended is left as it is) and
// returns it.
func (s *Store) Expire(ctx context.Context, id string, now time.Time) (Silence, error) {
	if !idRE.MatchString(id) {
		return Silence{}, ErrNotFound
	}
	kv, err := s.kv(ctx)
	if err != nil {
		return Silence{}, err
	}
	for attempt := 0; attempt < 5; attempt++ {
		e, err := kv.Get(ctx, id)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return Silence{}, ErrNotFound
		}
		if err != nil {
			return Silence{}, fmt.Errorf("read silence %s: %w", id, err)
		}
		var sl Silence
		if err := json.Unmarshal(e.Value(), &sl); err != nil {
			return Silence{}, fmt.Errorf("read silence %s: %w", id, err)
		}
		if !sl.EndsAt.After(now) {
			return sl, nil
		}
		sl.EndsAt = now.UTC()
		if sl.StartsAt.After(sl.EndsAt) {
			sl.StartsAt = sl.EndsAt
		}
		body, _ := json.Marshal(sl)
		if _, err := kv.Update(ctx, id, body, e.Revision()); err == nil {
			s.put(sl)
			return sl, nil
		}
	}
	return Silence{}, fmt.Errorf("expire silence %s: changed by someone else five times running", id)
}

// Watch keeps the in-memory silences current until ctx ends. It returns
// once the stored silences are loaded, and watches on in the background.
func (s *Store) Watch(ctx context.Context) error {
	kv, err := s.kv(ctx)
	if err != nil {
		return err
	}
	wa, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch silences: %w", err)
	}
	loaded := make(chan struct{})
	go func() {
		defer func() { _ = wa.Stop() }()
		once := sync.OnceFunc(func() { close(loaded) })
		defer once()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-wa.Updates():
				if !ok {
					return
				}
				if e == nil {
					once() // the initial values are in
					continue
				}
				s.apply(e)
			}
		}
	}()
	select {
	case <-loaded:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Store) apply(e jetstream.KeyValueEntry) {
	if e.Operation() != jetstream.KeyValuePut {
		s.mu.Lock()
		delete(s.cache, e.Key())
		s.mu.Unlock()
		return
	}
	var sl Silence
	if err := json.Unmarshal(e.Value(), &sl); err != nil {
		s.log.Warn("ignoring an unreadable silence", "id", e.Key(), "err", err)
		return
	}
	s.put(sl)
}

func (s *Store) put(sl Silence) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cache[sl.ID] = sl
}

// Match returns an active silence that matches x, if there is one.
func (s *Store) Match(x crossing.Crossing, now time.Time) (Silence, bool) {
	if s == nil {
		return Silence{}, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, sl := range s.cache {
		if sl.Active(now) && sl.Match.Matches(x) {
			return sl, true
		}
	}
	return Silence{}, false
}
