package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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
//
// NATS may come back from a power cut without its last acknowledged
// writes (it acknowledges before they are on disk). The mirror then holds
// states the server no longer has: a page's crossing marked fired whose
// job was lost with it, which no later sweep would fire again, and
// revisions every write of the page is refused against, for good. So
// each sweep first checks that the server still holds the newest
// revision the mirror has seen, and if not, reloads the mirror from the
// server: what NATS forgot is judged again, and fires again. A crossing
// mailed meanwhile may be mailed twice (its sent ledger entry is
// forgotten too); none is lost.
type stateStore struct {
	kv     jetstream.KeyValue
	logger *slog.Logger
	// opTimeout is defaultNATSOpTimeout but in tests, which would
	// otherwise wait that long for each request never answered.
	opTimeout time.Duration

	mu    sync.Mutex
	cache map[string]entry
	// launched indexes the keys of cache whose state names its site (it
	// remembers a launch): a sweep reads those (siteLaunches), not a
	// walk over a million states.
	launched map[string]struct{}
	ready    bool
	// watchCtx is what sync was given: the watchers' lifetime. gen
	// numbers them (a reload starts another, and what an old one still
	// delivers is dropped); stop ends the current one.
	watchCtx context.Context
	gen      int
	stop     func()
	// newest is the highest revision of the bucket seen (read, watched
	// or written) and newestKey its key: if the server holds that key at
	// a lower revision, or not at all, NATS has forgotten writes.
	newest    uint64
	newestKey string
	// behind: a read found the server behind the mirror (a key at an
	// older revision than the mirror's), which only forgotten writes
	// explain; the next sweep reloads.
	behind bool
}

// progressKey holds how far sweeps have evaluated, for catching up.
const progressKey = pagestate.ProgressKey

// defaultNATSOpTimeout bounds each KV read and write of a sweep, and each
// job it publishes. A sweep's context allows sweep_timeout (5 min), and
// nats.go then waits that long for a request's reply instead of its own
// 5 s: on a NATS cluster, a request whose reply was lost with a restarted
// node held the sweep, and with it the leader's lease (renewed all
// along), for minutes, so no crossing was handed on by anyone (found by
// TestClusterNATSNodesFailMidNotify).
const defaultNATSOpTimeout = 5 * time.Second

// natsOp is ctx bounded for one NATS request. handOn's publishes take the
// store's bound too, so that one setting bounds every request of a sweep.
func (s *stateStore) natsOp(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.opTimeout)
}

func newStateStore(kv jetstream.KeyValue, logger *slog.Logger) *stateStore {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &stateStore{kv: kv, logger: logger, opTimeout: defaultNATSOpTimeout, cache: map[string]entry{}}
}

// attach gives the store its bucket (Sweeper.open).
func (s *stateStore) attach(kv jetstream.KeyValue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kv = kv
}

// sync loads the whole bucket and then follows its changes until ctx is
// done. It returns once the initial load is complete, with the watcher
// running in the background.
func (s *stateStore) sync(ctx context.Context) error {
	s.mu.Lock()
	s.watchCtx = ctx
	s.mu.Unlock()
	return s.watch(ctx)
}

// watch starts a watcher of the whole bucket, loads what it holds into a
// new mirror, puts that in place of the old one (whose watcher it stops)
// and follows the bucket's changes in the background until ctx is done.
func (s *stateStore) watch(ctx context.Context) error {
	wctx, cancel := context.WithCancel(ctx)
	w, err := s.kv.WatchAll(wctx)
	if err != nil {
		cancel()
		return fmt.Errorf("watch sweeper state: %w", err)
	}
	stop := func() { _ = w.Stop(); cancel() }
	cache := map[string]entry{}
	var newest uint64
	var newestKey string
	for initial := true; initial; {
		select {
		case <-ctx.Done():
			stop()
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				cancel()
				return errors.New("sweeper state watcher closed")
			}
			if e == nil { // the end of the initial values
				initial = false
				break
			}
			if e.Revision() > newest {
				newest, newestKey = e.Revision(), e.Key()
			}
			applyTo(cache, e)
		}
	}
	s.mu.Lock()
	old := s.stop
	s.gen++
	gen := s.gen
	s.cache, s.ready, s.stop = cache, true, stop
	s.launched = launchedOf(cache)
	s.newest, s.newestKey, s.behind = newest, newestKey, false
	s.mu.Unlock()
	if old != nil {
		old()
	}
	go func() {
		for e := range w.Updates() {
			if e != nil {
				s.apply(e, gen)
			}
		}
	}()
	return nil
}

func (s *stateStore) apply(e jetstream.KeyValueEntry, gen int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen != s.gen {
		return // an old watcher's, replaced by a reload
	}
	s.seen(e.Key(), e.Revision())
	applyTo(s.cache, e)
	s.noteLaunch(e.Key())
}

// applyTo puts a watched entry in cache, unless cache has it already.
func applyTo(cache map[string]entry, e jetstream.KeyValueEntry) {
	if e.Key() == progressKey {
		return
	}
	if cur, ok := cache[e.Key()]; ok && cur.rev >= e.Revision() {
		return // our own write, already cached
	}
	if e.Operation() != jetstream.KeyValuePut {
		delete(cache, e.Key())
		return
	}
	st, err := pagestate.Decode(e.Value())
	if err != nil {
		return // get() will fetch it and report the error
	}
	cache[e.Key()] = entry{st: st, rev: e.Revision()}
}

// seen notes a revision of key the server had. Call with s.mu held.
func (s *stateStore) seen(key string, rev uint64) {
	if rev > s.newest {
		s.newest, s.newestKey = rev, key
	}
}

// forgotten reports whether NATS has forgotten writes the mirror saw:
// the server no longer holds the newest revision seen (a bucket is a
// stream, and a stream forgets its last writes, so whatever else it
// forgot, it forgot that one), or a read found it behind the mirror.
func (s *stateStore) forgotten(ctx context.Context) (bool, string, error) {
	s.mu.Lock()
	newest, key, behind := s.newest, s.newestKey, s.behind
	s.mu.Unlock()
	if behind {
		return true, "a state read back older than the sweeper had it", nil
	}
	if newest == 0 {
		return false, "", nil
	}
	ctx, cancel := s.natsOp(ctx)
	defer cancel()
	e, err := s.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return true, fmt.Sprintf("%s, seen at revision %d, is gone", key, newest), nil
	case err != nil:
		return false, "", fmt.Errorf("check sweeper state %s: %w", key, err)
	case e.Revision() < newest:
		return true, fmt.Sprintf("%s, seen at revision %d, is back at %d", key, newest, e.Revision()), nil
	}
	return false, "", nil
}

// reload puts the mirror back to what the server holds, if NATS has
// forgotten writes since the mirror saw them.
func (s *stateStore) reload(ctx context.Context) error {
	forgot, why, err := s.forgotten(ctx)
	if err != nil || !forgot {
		return err
	}
	s.mu.Lock()
	watchCtx := s.watchCtx
	s.mu.Unlock()
	if watchCtx == nil {
		watchCtx = context.WithoutCancel(ctx)
	}
	s.logger.Warn("NATS has forgotten sweeper states it had acknowledged (a restart after a power cut?); reloading them from NATS: what it forgot is judged again, and its crossings fire again (a mail already sent may be sent twice)",
		"why", why)
	start := time.Now()
	if err := s.watch(watchCtx); err != nil {
		return fmt.Errorf("reload sweeper state: %w", err)
	}
	s.logger.Info("sweeper states reloaded", "states", len(s.keys()), "took", time.Since(start).Round(time.Millisecond))
	return nil
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

// pages is the pages (pagestate.PageOf) with a state under some rule,
// and whether the cache is current: if not, no page surely has none.
func (s *stateStore) pages() (map[string]bool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]bool, len(s.cache))
	for k := range s.cache {
		out[pagestate.PageOf(k)] = true
	}
	return out, s.ready
}

// fetch reads a key from the server, for when the cache is not current
// (a write lost a race).
func (s *stateStore) fetch(ctx context.Context, key string) (pageState, uint64, error) {
	ctx, cancel := s.natsOp(ctx)
	defer cancel()
	kve, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		s.mu.Lock()
		if _, ok := s.cache[key]; ok {
			s.behind = true // the mirror has it, the server not (never deleted)
		}
		s.mu.Unlock()
		return pageState{}, 0, nil
	}
	if err != nil {
		return pageState{}, 0, fmt.Errorf("load state %s: %w", key, err)
	}
	st, err := pagestate.Decode(kve.Value())
	if err != nil {
		return pageState{}, 0, fmt.Errorf("state %s: %w", key, err)
	}
	s.mu.Lock()
	if cur, ok := s.cache[key]; ok && cur.rev > kve.Revision() {
		s.behind = true // the server holds an older revision than the mirror
	}
	s.mu.Unlock()
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
	wctx, cancel := s.natsOp(ctx)
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
	s.seen(key, rev)
	if cur, ok := s.cache[key]; ok && cur.rev > rev {
		return
	}
	s.cache[key] = entry{st: st, rev: rev}
	s.noteLaunch(key)
}

// progress is how far the sweeps got: the time the last complete sweep
// evaluated. Zero: never swept.
//
// It first reloads the mirror if NATS has forgotten writes (see
// stateStore): a sweep judges from what the server holds.
func (s *stateStore) progress(ctx context.Context) (time.Time, error) {
	if err := s.reload(ctx); err != nil {
		return time.Time{}, err
	}
	ctx, cancel := s.natsOp(ctx)
	defer cancel()
	e, err := s.kv.Get(ctx, progressKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("load sweep progress: %w", err)
	}
	var t time.Time
	if err := t.UnmarshalText(e.Value()); err != nil {
		return time.Time{}, fmt.Errorf("sweep progress %q: %w", e.Value(), err)
	}
	return t, nil
}

func (s *stateStore) setProgress(ctx context.Context, t time.Time) error {
	body, _ := t.UTC().MarshalText()
	ctx, cancel := s.natsOp(ctx)
	defer cancel()
	rev, err := s.kv.Put(ctx, progressKey, body)
	if err != nil {
		return fmt.Errorf("save sweep progress: %w", err)
	}
	s.mu.Lock()
	s.seen(progressKey, rev)
	s.mu.Unlock()
	return nil
}
