package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/pipeline/sweep/pagestate"
)

// pageState is a page's stored state; pagestate owns its format.
type pageState = pagestate.State

// entry is a cached state and the revision it was read at: every write
// is conditional on it, so two sweepers cannot both move one state.
type entry struct {
	st  pageState
	rev uint64
}

// stateStore mirrors the sweeps bucket in memory. A sweep reads states for
// tens of thousands of pages; fetching each from the server would cost a
// round trip apiece, so a watcher keeps the mirror current and writes go
// through to the server, revision-checked.
type stateStore struct {
	kv jetstream.KeyValue

	mu    sync.Mutex
	cache map[string]entry
	ready bool
}

// progressKey holds how far sweeps have evaluated, for catching up.
const progressKey = pagestate.ProgressKey

// natsOpTimeout bounds each KV read and write of a sweep, and each job it
// publishes. A sweep's context allows sweep_timeout (5 min), and nats.go
// then waits that long for a request's reply instead of its own 5 s: on a
// NATS cluster, a request whose reply was lost with a restarted node held
// the sweep, and with it the leader's lease (renewed all along), for
// minutes, so no crossing was handed on by anyone (found by
// TestClusterNATSNodesFailMidNotify). A var for the test of it.
var natsOpTimeout = 5 * time.Second

// natsOp is ctx bounded for one NATS request.
func natsOp(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, natsOpTimeout)
}

func newStateStore(kv jetstream.KeyValue) *stateStore {
	return &stateStore{kv: kv, cache: map[string]entry{}}
}

// sync loads the whole bucket and then follows its changes until ctx is
// done. It returns once the initial load is complete, with the watcher
// running in the background.
func (s *stateStore) sync(ctx context.Context) error {
	w, err := s.kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch sweeper state: %w", err)
	}
	initial := true
	for initial {
		select {
		case <-ctx.Done():
			w.Stop()
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("sweeper state watcher closed")
			}
			if e == nil { // the end of the initial values
				initial = false
				break
			}
			s.apply(e)
		}
	}
	s.mu.Lock()
	s.ready = true
	s.mu.Unlock()
	go func() {
		defer w.Stop()
		for e := range w.Updates() {
			if e != nil {
				s.apply(e)
			}
		}
	}()
	return nil
}

func (s *stateStore) apply(e jetstream.KeyValueEntry) {
	if e.Key() == progressKey {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.cache[e.Key()]; ok && cur.rev >= e.Revision() {
		return // our own write, already cached
	}
	if e.Operation() != jetstream.KeyValuePut {
		delete(s.cache, e.Key())
		return
	}
	st, err := pagestate.Decode(e.Value())
	if err != nil {
		return // get() will fetch it and report the error
	}
	s.cache[e.Key()] = entry{st: st, rev: e.Revision()}
}

// get returns a key's state and revision (0: none yet).
func (s *stateStore) get(ctx context.Context, key string) (pageState, uint64, error) {
	s.mu.Lock()
	e, ok := s.cache[key]
	ready := s.ready
	s.mu.Unlock()
	if ok {
		return e.st, e.rev, nil
	}
	if ready {
		return pageState{}, 0, nil
	}
	return s.fetch(ctx, key)
}

// none reports whether a key surely has no state: the cache is current
// and holds nothing for it.
func (s *stateStore) none(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.cache[key]
	return s.ready && !ok
}

// fetch reads a key from the server, for when the cache is not current
// (a write lost a race).
func (s *stateStore) fetch(ctx context.Context, key string) (pageState, uint64, error) {
	ctx, cancel := natsOp(ctx)
	defer cancel()
	kve, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return pageState{}, 0, nil
	}
	if err != nil {
		return pageState{}, 0, fmt.Errorf("load state %s: %w", key, err)
	}
	st, err := pagestate.Decode(kve.Value())
	if err != nil {
		return pageState{}, 0, fmt.Errorf("state %s: %w", key, err)
	}
	s.store(key, st, kve.Revision())
	return st, kve.Revision(), nil
}

// keys lists the cached keys.
func (s *stateStore) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.cache))
	for k := range s.cache {
		out = append(out, k)
	}
	return out
}

// put writes a state if nobody else did since rev was read.
func (s *stateStore) put(ctx context.Context, key string, st pageState, rev uint64) (uint64, error) {
	body, err := json.Marshal(st)
	if err != nil {
		return 0, fmt.Errorf("encode state %s: %w", key, err)
	}
	wctx, cancel := natsOp(ctx)
	if rev == 0 {
		rev, err = s.kv.Create(wctx, key, body)
	} else {
		rev, err = s.kv.Update(wctx, key, body, rev)
	}
	cancel()
	if err != nil {
		// Refresh from the server so the next sweep starts from the winner's state.
		if _, _, ferr := s.fetch(ctx, key); ferr != nil {
			err = errors.Join(err, ferr)
		}
		return 0, fmt.Errorf("save state %s (another sweeper moved it; it is evaluated again next sweep): %w", key, err)
	}
	s.store(key, st, rev)
	return rev, nil
}

func (s *stateStore) store(key string, st pageState, rev uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.cache[key]; ok && cur.rev > rev {
		return
	}
	s.cache[key] = entry{st: st, rev: rev}
}

// progress is how far the sweeps got: the time the last complete sweep
// evaluated. Zero: never swept.
func (s *stateStore) progress(ctx context.Context) (time.Time, uint64, error) {
	ctx, cancel := natsOp(ctx)
	defer cancel()
	e, err := s.kv.Get(ctx, progressKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return time.Time{}, 0, nil
	}
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("load sweep progress: %w", err)
	}
	var t time.Time
	if err := t.UnmarshalText(e.Value()); err != nil {
		return time.Time{}, 0, fmt.Errorf("sweep progress %q: %w", e.Value(), err)
	}
	return t, e.Revision(), nil
}

func (s *stateStore) setProgress(ctx context.Context, t time.Time) error {
	body, _ := t.UTC().MarshalText()
	ctx, cancel := natsOp(ctx)
	defer cancel()
	if _, err := s.kv.Put(ctx, progressKey, body); err != nil {
		return fmt.Errorf("save sweep progress: %w", err)
	}
	return nil
}
