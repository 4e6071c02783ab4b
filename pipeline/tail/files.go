package tail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/pipeline/discover"
)

// Which files are followed, and when.
//
// An input's path is a literal path or a glob (`*`, `?`, `[...]`, `**`).
// A literal path is followed from the start whether or not it exists
// (its follower waits for it), on the subject named by the path as
// written: what it was before globs existed, so deployments keep their
// positions. The files of glob inputs are found by one discover.Watcher
// for all of them, each followed on a subject named by its own path; those
// there when Run starts obey start_at, those that appear later are read
// from their beginning. A path has one follower at most, so a file
// matching two globs is followed once, for the first; a follower of a
// glob's file ends once the file is deleted and its path stays empty (it
// is started again if the path is found again). max_files bounds the
// followers; files refused for it are followed as others end.

// isGlob reports whether an input's path is a glob. A path without these
// characters names one file and keeps the behaviour of a literal path.
func isGlob(path string) bool { return strings.ContainsAny(path, "*?[") }

// absPath makes a literal input path absolute and clean, so that two
// spellings of one path are one follower.
func absPath(path string) string {
	if path == "" {
		return ""
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return filepath.Clean(path)
}

// discoverConfig is the discover section with Paths taken from the
// inputs, path i being input i's, so that discover's errors name the
// input. A literal path goes in absolute and with `\` escaped: as a glob
// it then matches the one file it names, and Validate reports it listed
// twice under another spelling.
func (c Config) discoverConfig() discover.Config {
	d := c.Discover
	d.Paths = make([]string, len(c.Inputs))
	for i, in := range c.Inputs {
		d.Paths[i] = in.Path
		if !isGlob(in.Path) {
			d.Paths[i] = strings.ReplaceAll(absPath(in.Path), `\`, `\\`)
		}
	}
	return d
}

// validateFiles checks the inputs' paths (set, absolute and clean for a
// glob, none listed twice: discover's checks, which name
// ingest.tail.inputs[i].path), the discover section and the limits.
func (c Config) validateFiles() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	// With no file inputs (syslog or stdin only) discover has nothing to
	// look for, and would say that no path is set.
	if len(c.Inputs) > 0 {
		errs = append(errs, c.discoverConfig().Validate())
	}
	literal := 0
	for _, in := range c.Inputs {
		if !isGlob(in.Path) {
			literal++
		}
	}
	if c.MaxFiles < 1 || c.MaxFiles < literal {
		add("ingest.tail.max_files: must be at least 1 and at least the %d literal input paths, got %d", literal, c.MaxFiles)
	}
	// A renewal every ttl/3 must fit round trips to NATS; longer than
	// minutes leaves a file unread that long after a tailer dies.
	if c.LeaseTTL < time.Second || c.LeaseTTL > 10*time.Minute {
		add("ingest.tail.lease_ttl: must be 1s..10m, got %s", c.LeaseTTL)
	}
	return errors.Join(errs...)
}

// fileSetup is what New prepares for following files.
type fileSetup struct {
	watcher   *discover.Watcher // nil without glob inputs
	globPaths []string          // the glob inputs' patterns, for the watcher
	globInput []int             // the input of each of the watcher's globs
	fm        *fileMetrics
	// linger is how long the follower of a glob's file waits for its
	// path to be filled again once its file is gone, before it ends:
	// long enough for the Watcher to have scanned and seen the path
	// empty, so that it reports the path if it comes back.
	linger  time.Duration
	leases  jetstream.KeyValue // bus.BucketTailLeases
	records jetstream.KeyValue // bus.BucketTailFiles
	self    holder             // this process, as a lease names it
	// followed are the files followed now: what the metrics export, and
	// which names are live files rather than rotated copies (siblings).
	followed followedSet
}

// followedSet is the files followed now, by absolute path.
type followedSet struct {
	mu     sync.Mutex
	byPath map[string]*follower
	// refused are glob files not followed for max_files, and whether
	// they were there at start (start_at applies to those).
	refused    map[string]bool
	warnedFull bool
	states     []*fileState // of the glob followers, for the metrics
}

// newFileSetup registers the per-file metrics and notes the glob inputs;
// open, at Start, watches their directories and opens the lease buckets.
func (t *Tailer) newFileSetup(reg prometheus.Registerer) *fileSetup {
	fs := &fileSetup{followed: followedSet{byPath: map[string]*follower{}, refused: map[string]bool{}}}
	var literal []*fileState
	for i, in := range t.cfg.Inputs {
		if !isGlob(in.Path) {
			literal = append(literal, t.states[i])
		} else {
			fs.globPaths = append(fs.globPaths, in.Path)
			fs.globInput = append(fs.globInput, i)
		}
	}
	reg.MustRegister(newStateCollector(literal, fs.globStates))
	fs.fm = newFileMetrics(reg)
	d := t.cfg.Discover
	fs.linger = 2*d.PollInterval + d.Debounce
	return fs
}

// open starts the globs' watches and opens the lease buckets (Start).
func (fs *fileSetup) open(ctx context.Context, cfg Config, b *bus.Bus, logger *slog.Logger, reg prometheus.Registerer) error {
	if len(cfg.Inputs) == 0 {
		return nil
	}
	// Without globs there is nothing to discover: no inotify watches,
	// no scans, as before globs existed.
	if len(fs.globPaths) > 0 {
		d := cfg.Discover
		d.Paths = fs.globPaths
		w, err := discover.New(d, logger, reg)
		if err != nil {
			return err
		}
		fs.watcher = w
	}
	return fs.setupLeases(ctx, cfg, b)
}

// fileMetrics are the metrics of files.go and lease.go.
type fileMetrics struct {
	followed prometheus.Gauge
	refused  prometheus.Counter
	standby  prometheus.Gauge
	lost     prometheus.Counter
	failing  prometheus.Gauge
	failures prometheus.Counter
}

func newFileMetrics(reg prometheus.Registerer) *fileMetrics {
	m := &fileMetrics{
		followed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pagewatch_ingest_tail_files",
			Help: "Files followed (literal inputs, and files found by glob inputs), standing by or not.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_ingest_tail_refused_files_total",
			Help: "Files found by glob inputs and not followed, because ingest.tail.max_files were followed already (followed later as others end).",
		}),
		standby: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pagewatch_ingest_tail_standby_files",
			Help: "Files not read because another tailer on this host holds their lease.",
		}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_ingest_tail_leases_lost_total",
			Help: "File leases lost while held (NATS unreachable for lease_ttl, or the lease taken): the file's follower stopped and stood by.",
		}),
		failing: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pagewatch_ingest_tail_failing_files",
			Help: "Files whose follower failed (unreadable, a directory where a log was, ...) and waits to try again; the other inputs go on.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pagewatch_ingest_tail_file_failures_total",
			Help: "Times a file's follower failed and was started again after a pause.",
		}),
	}
	reg.MustRegister(m.followed, m.refused, m.standby, m.lost, m.failing, m.failures)
	return m
}

// fileRun is the file followers of one Run: the goroutines, and the
// errors that end a backfill-only Run.
type fileRun struct {
	t      *Tailer
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	set    *followedSet // t.files.followed; its mu guards errs too
	errs   []error

	stopBackfill func()
}

// startFiles starts following the literal inputs and the glob inputs'
// files there now, then watches for more. wait waits for them all.
func (t *Tailer) startFiles(ctx context.Context, cancel context.CancelFunc) (*fileRun, error) {
	r := &fileRun{t: t, ctx: ctx, cancel: cancel, set: &t.files.followed, stopBackfill: func() {}}
	fws := r.addStart()
	if t.backfill != nil {
		stop, err := t.startBackfill(ctx, fws)
		if err != nil {
			return nil, err
		}
		r.stopBackfill = stop
	}
	for _, fw := range fws {
		r.launch(fw)
	}
	// A backfill-only run reads what is there, and stops.
	if w := t.files.watcher; w != nil && (t.backfill == nil || !t.backfill.Only) {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			_ = w.Run(ctx, r.found) // returns nil once ctx is done
		}()
	}
	return r, nil
}

// addStart makes the followers of the literal inputs and of the glob
// inputs' files there now.
func (r *fileRun) addStart() []*follower {
	t := r.t
	r.set.mu.Lock()
	defer r.set.mu.Unlock()
	var fws []*follower
	for i, in := range t.cfg.Inputs {
		if !isGlob(in.Path) {
			fw := t.newFollower(in, t.parsers[i], t.states[i])
			fw.key = absPath(in.Path)
			r.set.byPath[fw.key] = fw
			fws = append(fws, fw)
		}
	}
	w := t.files.watcher
	if w != nil {
		// What is there now: the files start_at applies to, and those a
		// backfill plans before anything is read.
		paths, err := w.Scan()
		if err != nil {
			t.logger.Warn("scanning for access logs", "err", err)
		}
		for _, p := range paths {
			if pat, ok := w.Match(p); ok {
				if fw := r.add(p, pat, false); fw != nil {
					fws = append(fws, fw)
				}
			}
		}
	}
	t.files.fm.followed.Set(float64(len(r.set.byPath)))
	return fws
}

// wait waits for every follower and returns their errors.
func (r *fileRun) wait() error {
	r.wg.Wait()
	// An interrupted backfill's display still says how far it got.
	r.stopBackfill()
	r.set.mu.Lock()
	defer r.set.mu.Unlock()
	return errors.Join(r.errs...)
}

// add makes a follower for file p of glob input pattern pat, unless p is
// followed already or max_files are; fromStart is for a file that
// appeared while ingest ran. Called with mu held, or before launching.
func (r *fileRun) add(p string, pat int, fromStart bool) *follower {
	if _, ok := r.set.byPath[p]; ok {
		return nil // a repeat report, or a literal input's file
	}
	if other := r.sameFileAs(p); other != "" {
		// A rotated copy under a name the glob matches (access.log.old
		// with exclude_rotated missing it) while its follower drains it,
		// or a hard link: the file is published already, under other.
		r.t.logger.Warn("file is one already followed under another path; not followed again (if it is a rotated copy, add its name to ingest.tail.discover.exclude)",
			"file", p, "followed_as", other)
		return nil
	}
	if len(r.set.byPath) >= r.t.cfg.MaxFiles {
		r.refuse(p, !fromStart)
		return nil
	}
	i := r.t.files.globInput[pat]
	in := r.t.cfg.Inputs[i]
	in.Path = p
	// The file label is the matched path: as many series as files
	// followed, which max_files bounds.
	st := &fileState{path: p, site: in.Site}
	fw := r.t.newGlobFollower(in, r.t.parsers[i], st)
	fw.key, fw.fromStart = p, fromStart
	r.set.byPath[p] = fw
	r.set.states = append(r.set.states, st)
	delete(r.set.refused, p)
	return fw
}

func (r *fileRun) refuse(p string, atStart bool) {
	if _, ok := r.set.refused[p]; !ok {
		r.set.refused[p] = atStart
		r.t.files.fm.refused.Inc()
	}
	// Once per time the limit is reached: a glob can match thousands.
	if !r.set.warnedFull {
		r.set.warnedFull = true
		r.t.logger.Warn("ingest.tail.max_files files followed already; files found by glob inputs are not followed until others end",
			"max_files", r.t.cfg.MaxFiles, "file", p)
		return
	}
	r.t.logger.Debug("max_files reached; file not followed", "file", p)
}

// sameFileAs returns the path of a follower reading the file at p now.
func (r *fileRun) sameFileAs(p string) string {
	st, err := os.Stat(p)
	if err != nil {
		return ""
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	for path, fw := range r.set.byPath {
		if cur := fw.current.Load(); cur != nil && cur.dev == uint64(sys.Dev) && cur.ino == sys.Ino {
			return path
		}
	}
	return ""
}

// found is the Watcher's report of a file: followed unless it is already.
// Every file found after the start set appeared while ingest ran (or
// between the start scan and the Watcher's), so it is read from its
// beginning.
func (r *fileRun) found(f discover.Found) {
	r.set.mu.Lock()
	defer r.set.mu.Unlock()
	if r.ctx.Err() != nil {
		return
	}
	if fw := r.add(f.Path, f.Pattern, true); fw != nil {
		r.t.files.fm.followed.Set(float64(len(r.set.byPath)))
		r.launch(fw)
	}
}

// Pauses before a failed file's follower starts again: doubling from
// the first to the last.
const (
	fileRetryFirst = time.Second
	fileRetryLast  = time.Minute
)

// launch runs fw until it ends. A follower's error is its file's alone:
// logged, counted, and the follower started again after a pause, from
// the file's position in the stream (open reads again whatever was read
// and not published), so one unreadable file (a successor logrotate
// created 0600, a directory where a log was) never stops the others,
// and is followed again once it can be read.
func (r *fileRun) launch(fw *follower) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		fm := r.t.files.fm
		for pause := fileRetryFirst; ; pause = min(2*pause, fileRetryLast) {
			began := time.Now()
			err := fw.run(r.ctx)
			if time.Since(began) > fileRetryLast {
				pause = fileRetryFirst // it had been followed: a new failure
			}
			switch {
			case errors.Is(err, errGone):
				r.ended(fw)
				return
			case err == nil || r.ctx.Err() != nil:
				return
			case r.t.backfill != nil && r.t.backfill.Only:
				// A backfill-only run reads what is there once and
				// says what it could not: its error ends the Run.
				r.set.mu.Lock()
				r.errs = append(r.errs, fmt.Errorf("tail %s: %w", fw.in.Path, err))
				r.set.mu.Unlock()
				r.cancel()
				return
			}
			fm.failures.Inc()
			fw.logger.Error("file not followed; the other inputs go on, and it is tried again", "err", err, "again_in", pause)
			fm.failing.Inc()
			select {
			case <-r.ctx.Done():
			case <-time.After(pause):
			}
			fm.failing.Dec()
			if r.ctx.Err() != nil {
				return
			}
		}
	}()
}

// ended forgets the follower of a glob's file that ended (its file
// deleted, its path empty for a while) and fills the freed place.
func (r *fileRun) ended(fw *follower) {
	r.set.mu.Lock()
	defer r.set.mu.Unlock()
	if r.set.byPath[fw.key] == fw {
		delete(r.set.byPath, fw.key)
	}
	r.set.states = slices.DeleteFunc(r.set.states, func(s *fileState) bool { return s == fw.state })
	if r.ctx.Err() != nil {
		return
	}
	fw.logger.Info("file gone; no longer followed")
	// The Watcher reports a path again only if it saw it gone; a file
	// that came back just as the follower gave up would be missed, so it
	// is looked at here, with the refused files.
	if _, ok := r.set.refused[fw.key]; !ok {
		r.set.refused[fw.key] = false
	}
	r.set.warnedFull = false
	for _, p := range slices.Sorted(maps.Keys(r.set.refused)) {
		if len(r.set.byPath) >= r.t.cfg.MaxFiles {
			break
		}
		atStart := r.set.refused[p]
		delete(r.set.refused, p)
		pat, ok := r.t.files.watcher.Match(p)
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() || !ok {
			continue // gone: the Watcher reports it if it comes back
		}
		if nf := r.add(p, pat, !atStart); nf != nil {
			r.launch(nf)
		}
	}
	r.t.files.fm.followed.Set(float64(len(r.set.byPath)))
}

// globStates returns the fileStates of the glob followers, for the
// metrics.
func (fs *fileSetup) globStates() []*fileState {
	fs.followed.mu.Lock()
	defer fs.followed.mu.Unlock()
	return slices.Clone(fs.followed.states)
}

// liveNames returns the base names of the files followed as live inputs
// in dir, beside base: their rotated copies are theirs, not base's
// (siblings). Literal inputs always count; glob files while followed.
func (fs *fileSetup) liveNames(inputs []Input, dir, base string) []string {
	var out []string
	keep := func(p string) {
		if b := filepath.Base(p); filepath.Dir(p) == dir && len(b) > len(base) && strings.HasPrefix(b, base) && !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	for _, in := range inputs {
		if !isGlob(in.Path) {
			keep(in.Path)
		}
	}
	if fs != nil {
		fs.followed.mu.Lock()
		for p := range fs.followed.byPath {
			keep(p)
		}
		fs.followed.mu.Unlock()
	}
	return out
}

// isLiveFile reports whether path is a file a glob input follows (or
// would), and so no rotated copy of another: the globs exclude rotated
// names (discover's exclude_rotated and exclude).
func (fs *fileSetup) isLiveFile(path string) bool {
	if fs == nil || fs.watcher == nil {
		return false
	}
	_, ok := fs.watcher.Match(path)
	return ok
}
