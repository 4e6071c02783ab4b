package discover

import (
	"errors"
	"io/fs"
	"syscall"
)

// All use of inotify is here, in Run's loop, and in dirWatcher
// (inotify_linux.go), which asks only for entries created, moved and
// deleted, so the web server's writes to its logs cost discovery nothing.

// startNotify sets up inotify, or logs why files are found by polling alone.
func (w *Watcher) startNotify() {
	fsw, err := newDirWatcher()
	if err != nil {
		w.m.watchErrors.WithLabelValues("init").Inc()
		w.logger.Warn("inotify unavailable (sysctl fs.inotify.max_user_instances?); finding files by polling alone",
			"err", err, "poll_interval", w.cfg.PollInterval)
		return
	}
	w.fsw = fsw
	w.m.inotify.Set(1)
}

func (w *Watcher) stopNotify() {
	if w.fsw == nil {
		return
	}
	_ = w.fsw.Close() // closing an inotify descriptor does not fail in a way that matters here
	w.fsw = nil
	w.m.inotify.Set(0)
	w.m.watched.Set(0)
}

// watch adds an inotify watch on dir. Reaching the watch limit ends
// inotify for this run: with some directories watched and others not,
// how soon a file is found would depend on where it is.
func (w *Watcher) watch(dir string) {
	add := w.fsw.Add
	if w.testAdd != nil {
		add = w.testAdd
	}
	err := add(dir)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		// Gone while being walked; its parent's event or the next scan
		// says so.
	case errors.Is(err, syscall.ENOSPC):
		w.m.watchErrors.WithLabelValues("limit").Inc()
		w.logger.Warn("inotify watch limit reached (sysctl fs.inotify.max_user_watches); finding files by polling alone from now on",
			"dir", dir, "watched", len(w.fsw.WatchList()), "poll_interval", w.cfg.PollInterval)
		w.stopNotify()
	default:
		w.m.watchErrors.WithLabelValues("add").Inc()
		w.warnOnce("watch:"+dir, "cannot watch directory; new files in it are found by polling", "dir", dir, "err", err)
	}
}

func (w *Watcher) setWatched() {
	if w.fsw != nil {
		w.m.watched.Set(float64(len(w.fsw.WatchList())))
	}
}
