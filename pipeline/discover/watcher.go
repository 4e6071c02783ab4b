// Package discover finds the access-log files to follow from globs, and
// notices new ones while running.
//
// Globs (Config.Paths) match per path segment with path.Match, and `**`
// as a whole segment matches any number of directories, none included.
// Excludes drop matches: by base name when the pattern has no `/`, by the
// whole path otherwise. By default rotated and compressed siblings
// (RotatedExcludes) are excluded: they are read through rotation handling
// and backfill, not followed as live inputs.
//
// Watcher.Run reports each matching regular file once: those there at
// start, then those that appear (created, renamed into place, or inside a
// directory created or moved in later). Changes are seen through inotify
// on every directory a glob can reach, debounced, and through a full scan
// every poll_interval, which is the safety net for what inotify misses
// (overflow, NFS, the watch limit) and all there is when inotify is off or
// failed.
//
// A path is not reported again while it exists, including across rotation
// by rename when the new file appears before the change is looked at. A
// path seen gone (deleted, renamed away) and then back is reported again,
// so a consumer must treat a report for a path it still follows as a
// no-op. Symlinks are followed to regular files, and where a glob segment
// names a symlinked directory; `**` does not descend into symlinked
// directories, so links cannot make a loop. A file reached under several
// paths (a symlinked directory, hard links) is reported under one of them.
package discover

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Watcher finds the files matching a Config's globs.
type Watcher struct {
	cfg     Config
	logger  *slog.Logger
	m       *metrics
	wk      walker
	running atomic.Bool

	// Run's state, used by its goroutine alone.
	dirs    map[string][]state // directories a glob reaches, with its positions there
	known   map[string]fileKey // reported files that exist, as last seen
	byKey   map[fileKey]string // the path each of those files was reported under
	warned  map[string]bool    // problems logged already this run
	scanErr map[string]bool    // errors of the last full scan
	fsw     *dirWatcher        // nil when polling alone
	testAdd func(dir string) error
}

// New returns a Watcher for cfg. Its metrics are registered with reg, so
// one registry takes one Watcher.
func New(cfg Config, logger *slog.Logger, reg prometheus.Registerer) (*Watcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := &Watcher{cfg: cfg, logger: logger, m: newMetrics(reg)}
	for _, p := range cfg.Paths {
		in, _ := compileInclude(p) // validated
		w.wk.incs = append(w.wk.incs, in)
	}
	for _, p := range cfg.excludes() {
		ex, _ := compileExclude(p)
		w.wk.excs = append(w.wk.excs, ex)
	}
	return w, nil
}

// Match reports the index of the first glob matching path, an absolute
// clean path, and false when none does or the path is excluded. It looks
// at the string alone, not at the file system.
func (w *Watcher) Match(path string) (int, bool) {
	if w.wk.excluded(path) {
		return 0, false
	}
	for i := range w.wk.incs {
		if w.wk.incs[i].matches(path) {
			return i, true
		}
	}
	return 0, false
}

// Scan returns the matching regular files that exist now, sorted, each
// file once (under the first of its paths). Directories that cannot be
// read are reported in the error, beside what could be found; a glob
// whose root does not exist matches nothing and is no error. Scan may be
// called while Run runs.
func (w *Watcher) Scan() ([]string, error) {
	res := w.wk.scan(context.Background(), nil)
	return sortedUnique(res.files), errors.Join(res.errs...)
}

// pending is what events touched since the last flush.
type pending struct {
	paths  map[string]op
	full   bool // a full scan is needed instead
	reason string
}

// Found is a file Run reports.
type Found struct {
	Path string
	// Pattern is the index in Config.Paths of the first glob matching
	// Path: for ingest, the input it belongs to.
	Pattern int
	// AtStart is set for the files there when Run started. For ingest,
	// start_at applies to those, while a file that appears later is read
	// from its beginning.
	AtStart bool
}

// Run calls found for each matching file that exists at start and for
// each that appears later, until ctx is done; it then returns nil. found
// is called from Run's goroutine, one file at a time; while it blocks,
// events queue in the kernel, and an overflow costs a full scan.
func (w *Watcher) Run(ctx context.Context, found func(Found)) error {
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("discover: Run is already running")
	}
	defer w.running.Store(false)
	w.dirs, w.known, w.byKey = nil, map[string]fileKey{}, map[fileKey]string{}
	w.warned, w.scanErr = map[string]bool{}, map[string]bool{}
	if w.cfg.Inotify {
		w.startNotify()
	}
	defer w.stopNotify()
	w.logger.Info("discovering access logs", "paths", w.cfg.Paths, "inotify", w.fsw != nil, "poll_interval", w.cfg.PollInterval)
	w.fullScan(ctx, "start", found)

	poll := time.NewTicker(w.cfg.PollInterval)
	defer poll.Stop()
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	defer debounce.Stop()
	armed := false
	pend := &pending{paths: map[string]op{}}
	for {
		var events <-chan event
		var errs <-chan error
		if w.fsw != nil {
			events, errs = w.fsw.Events, w.fsw.Errors
		}
		select {
		case <-ctx.Done():
			return nil
		case <-poll.C:
			w.fullScan(ctx, "poll", found)
		case ev, ok := <-events:
			if !ok {
				w.stopNotify()
				break
			}
			pend.paths[ev.Name] |= ev.Op
		case err, ok := <-errs:
			if !ok {
				w.stopNotify()
				break
			}
			w.eventError(err, pend)
		case <-debounce.C:
			armed = false
			w.flush(ctx, pend, found)
		}
		if !armed && (pend.full || len(pend.paths) > 0) {
			// Measured from the first event of a burst, not the last, so
			// a steady stream of changes is still looked at in time.
			debounce.Reset(w.cfg.Debounce)
			armed = true
		}
	}
}

func (w *Watcher) eventError(err error, pend *pending) {
	if errors.Is(err, errEventOverflow) {
		w.m.watchErrors.WithLabelValues("overflow").Inc()
		w.logger.Warn("inotify lost events (queue overflow; sysctl fs.inotify.max_queued_events); scanning everything")
		pend.full, pend.reason = true, "overflow"
		return
	}
	w.m.watchErrors.WithLabelValues("read").Inc()
	w.warnOnce("read:"+err.Error(), "reading inotify events failed", "err", err)
}

// fullScan walks every glob, reports what is new, forgets what is gone and
// brings the set of watched directories in line with what the globs reach.
func (w *Watcher) fullScan(ctx context.Context, reason string, found func(Found)) {
	w.m.rescans.WithLabelValues(reason).Inc()
	var watched map[string]bool
	if w.fsw != nil {
		watched = map[string]bool{}
		for _, d := range w.fsw.WatchList() {
			watched[d] = true
		}
	}
	res := w.wk.scan(ctx, func(dir string) {
		if w.fsw != nil && !watched[dir] {
			w.watch(dir)
		}
	})
	if ctx.Err() != nil {
		return
	}
	// Logged when they start, not at every scan; one that cleared is
	// logged again if it comes back.
	last := w.scanErr
	w.scanErr = map[string]bool{}
	for _, err := range res.errs {
		if w.scanErr[err.Error()] = true; !last[err.Error()] {
			w.logger.Warn("scanning for access logs", "err", err)
		}
	}
	w.dirs = res.dirs
	if w.fsw != nil {
		// A glob whose root does not exist yet: watch the nearest
		// directory above it that does, to see the root appear.
		above := map[string]bool{}
		for _, root := range res.missing {
			if d := existingAncestor(root); d != "" && !above[d] {
				above[d] = true
				if !watched[d] && w.fsw != nil {
					w.watch(d)
				}
			}
		}
		if w.fsw != nil {
			for d := range watched {
				if _, ok := res.dirs[d]; !ok && !above[d] {
					_ = w.fsw.Remove(d) // no glob reaches it any more; an error means it went already
				}
			}
		}
	}
	how := "scan"
	if reason == "start" {
		how = "start" // what was there before Run: Found.AtStart
	}
	w.reconcile(ctx, res, true, how, found)
}

// flush looks at what events touched since the last flush.
func (w *Watcher) flush(ctx context.Context, pend *pending, found func(Found)) {
	paths := slices.Sorted(maps.Keys(pend.paths))
	ops := maps.Clone(pend.paths)
	clear(pend.paths)
	if !pend.full && slices.ContainsFunc(paths, w.onRootPath) {
		pend.full, pend.reason = true, "root"
	}
	if pend.full {
		pend.full = false
		w.fullScan(ctx, pend.reason, found)
		return
	}
	res := newScanResult(w.dirs) // the live map: only directories new to it are walked
	for _, p := range paths {
		w.settle(ctx, res, p, ops[p])
	}
	for _, err := range res.errs {
		if !w.scanErr[err.Error()] {
			w.scanErr[err.Error()] = true
			w.logger.Warn("scanning for access logs", "err", err)
		}
	}
	w.reconcile(ctx, res, false, "event", found)
}

// onRootPath reports whether p is a glob's root or above one: such a
// change moves where globs start, which a full scan sorts out.
func (w *Watcher) onRootPath(p string) bool {
	for i := range w.wk.incs {
		r := w.wk.incs[i].root
		if r == p || strings.HasPrefix(r, p+"/") {
			return true
		}
	}
	return false
}

// settle brings what is known about path p, which an event touched, in
// line with what is there now.
func (w *Watcher) settle(ctx context.Context, res *scanResult, p string, o op) {
	fi, err := os.Stat(p)
	// A directory created where one was known replaced it (mkdir after
	// rmdir, a rename over it): walk it afresh.
	if _, ok := w.dirs[p]; ok && (err != nil || !fi.IsDir() || o.Has(opCreate)) {
		w.dropDir(p)
	}
	if _, ok := w.known[p]; ok && (err != nil || !fi.Mode().IsRegular()) {
		w.forget(p)
	}
	parent := filepath.Dir(p)
	if states, ok := w.dirs[parent]; ok && err == nil {
		w.wk.entry(ctx, res, parent, filepath.Base(p), nil, w.wk.expand(states), func(dir string) {
			if w.fsw != nil {
				w.watch(dir)
			}
		})
	}
}

// dropDir forgets directory p and everything below it, keeping the files
// that are still there under the same path.
func (w *Watcher) dropDir(p string) {
	for d := range w.dirs {
		if d == p || strings.HasPrefix(d, p+"/") {
			delete(w.dirs, d)
			if w.fsw != nil {
				_ = w.fsw.Remove(d) // inotify drops the watch of a deleted directory itself
			}
		}
	}
	for f := range w.known {
		if strings.HasPrefix(f, p+"/") {
			if fi, err := os.Stat(f); err != nil || !fi.Mode().IsRegular() {
				w.forget(f)
			}
		}
	}
}

// reconcile reports the new files in res, in order, found how: "start"
// (the first scan), "scan" or "event". After a full scan it also forgets
// the known files that are gone.
func (w *Watcher) reconcile(ctx context.Context, res *scanResult, full bool, how string, found func(Found)) {
	if full {
		for p := range w.known {
			if _, ok := res.files[p]; ok {
				continue
			}
			// Not found, but maybe still there, in a directory that could
			// not be read this time: forgetting it would report it again.
			if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
				w.forget(p)
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(res.files)) {
		if ctx.Err() != nil {
			return
		}
		w.consider(p, res.files[p], how, found)
	}
	w.m.files.Set(float64(len(w.known)))
	w.setWatched()
}

// consider reports p unless it is known, or is another path to a known
// file that is still there.
func (w *Watcher) consider(p string, c candidate, how string, found func(Found)) {
	key := c.key
	if old, ok := w.known[p]; ok {
		// Rotation puts a new file at a known path: still the same input.
		if old != key {
			if w.byKey[old] == p {
				delete(w.byKey, old)
			}
			w.known[p] = key
			w.byKey[key] = p
		}
		return
	}
	if key != (fileKey{}) {
		if q, ok := w.byKey[key]; ok {
			if fi, err := os.Stat(q); err == nil && fi.Mode().IsRegular() && keyOf(fi) == key {
				w.logger.Debug("same file as one already found; not reported", "path", p, "found_as", q)
				return
			}
			w.forget(q)
		}
		w.byKey[key] = p
	}
	w.known[p] = key
	label := how
	if how == "start" {
		label = "scan" // the metric tells scans from events only
	}
	w.m.found.WithLabelValues(label).Inc()
	w.logger.Debug("found access log", "path", p, "how", how)
	found(Found{Path: p, Pattern: c.pat, AtStart: how == "start"})
}

func (w *Watcher) forget(p string) {
	if key, ok := w.known[p]; ok {
		delete(w.known, p)
		if w.byKey[key] == p {
			delete(w.byKey, key)
		}
	}
}

func (w *Watcher) warnOnce(id, msg string, args ...any) {
	if w.warned[id] {
		w.logger.Debug(msg, args...)
		return
	}
	w.warned[id] = true
	w.logger.Warn(msg, args...)
}

// existingAncestor returns the nearest directory above p that exists.
func existingAncestor(p string) string {
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
		if d == "/" || d == "." {
			return ""
		}
	}
}
