//go:build linux

package discover

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dirWatcher is inotify on directories, asking the kernel only for what
// discovery needs: entries created, moved and deleted. fsnotify, used
// before, also subscribes to IN_MODIFY whatever is asked, so every line a
// web server appended to a watched log cost an event read and dropped
// (~3 µs of CPU a line; BenchmarkAppendToWatchedLog). With this mask the
// kernel never queues those events.
type dirWatcher struct {
	Events chan event
	Errors chan error

	file *os.File // the inotify descriptor, non-blocking: Close ends a read
	done chan struct{}

	mu    sync.Mutex
	byWD  map[int32]string
	byDir map[string]int32
	once  sync.Once
}

// watchMask: entries appearing, going and moving in the directory, and
// the directory itself going or moving; IN_ONLYDIR refuses a path that is
// not a directory (ENOTDIR), as a file swapped in for a directory must be.
const watchMask = unix.IN_CREATE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

func newDirWatcher() (*dirWatcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	w := &dirWatcher{
		Events: make(chan event, 64),
		Errors: make(chan error, 1),
		// Non-blocking, the descriptor goes through Go's poller: a read
		// waits without holding a thread, and Close wakes it.
		file:  os.NewFile(uintptr(fd), "inotify"),
		done:  make(chan struct{}),
		byWD:  map[int32]string{},
		byDir: map[string]int32{},
	}
	go w.read()
	return w, nil
}

// Add watches dir; watching a directory already watched is no error.
func (w *dirWatcher) Add(dir string) error {
	dir = filepath.Clean(dir)
	var wd int
	var err error
	rc, cerr := w.file.SyscallConn()
	if cerr != nil {
		return cerr
	}
	if cerr := rc.Control(func(fd uintptr) { wd, err = unix.InotifyAddWatch(int(fd), dir, watchMask) }); cerr != nil {
		return cerr
	}
	if err != nil {
		return &os.PathError{Op: "inotify_add_watch", Path: dir, Err: err}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if old, ok := w.byDir[dir]; ok && old != int32(wd) {
		delete(w.byWD, old)
	}
	w.byWD[int32(wd)], w.byDir[dir] = dir, int32(wd)
	return nil
}

// Remove stops watching dir. A directory not watched (or whose watch the
// kernel dropped already, because it was deleted) is no error.
func (w *dirWatcher) Remove(dir string) error {
	dir = filepath.Clean(dir)
	w.mu.Lock()
	wd, ok := w.byDir[dir]
	if ok {
		delete(w.byDir, dir)
		delete(w.byWD, wd)
	}
	w.mu.Unlock()
	if !ok {
		return nil
	}
	rc, err := w.file.SyscallConn()
	if err != nil {
		return err
	}
	var rmErr error
	if err := rc.Control(func(fd uintptr) { _, rmErr = unix.InotifyRmWatch(int(fd), uint32(wd)) }); err != nil {
		return err
	}
	if rmErr != nil && !errors.Is(rmErr, unix.EINVAL) { // EINVAL: the kernel dropped it already
		return &os.PathError{Op: "inotify_rm_watch", Path: dir, Err: rmErr}
	}
	return nil
}

// WatchList returns the directories watched.
func (w *dirWatcher) WatchList() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.byDir))
	for d := range w.byDir {
		out = append(out, d)
	}
	return out
}

// Close ends the watches and the reader; Events and Errors are closed once
// the reader has stopped. Calling it again does nothing.
func (w *dirWatcher) Close() error {
	var err error
	w.once.Do(func() {
		close(w.done)
		err = w.file.Close()
	})
	return err
}

// read turns the kernel's event records into events until Close.
func (w *dirWatcher) read() {
	defer close(w.Events)
	defer close(w.Errors)
	// Room for many records at once: each is 16 bytes plus its name.
	buf := make([]byte, 64*1024)
	for {
		n, err := w.file.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrClosed) || errors.Is(err, io.EOF) {
				return
			}
			if !w.send(nil, err) {
				return
			}
			continue
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			raw := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameEnd := off + unix.SizeofInotifyEvent + int(raw.Len)
			if nameEnd > n {
				break // cannot happen: the kernel writes whole records
			}
			name := buf[off+unix.SizeofInotifyEvent : nameEnd]
			off = nameEnd
			if !w.handle(raw.Wd, raw.Mask, cString(name)) {
				return
			}
		}
	}
}

// handle sends the event one record stands for; false once closed.
func (w *dirWatcher) handle(wd int32, mask uint32, name string) bool {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		return w.send(nil, errEventOverflow)
	}
	w.mu.Lock()
	dir, ok := w.byWD[wd]
	if mask&unix.IN_IGNORED != 0 && ok {
		// The kernel dropped the watch (its directory was deleted or
		// moved off the filesystem): forget it so it can be added again.
		delete(w.byWD, wd)
		if w.byDir[dir] == wd {
			delete(w.byDir, dir)
		}
	}
	w.mu.Unlock()
	if !ok || mask&unix.IN_IGNORED != 0 {
		return true
	}
	path := dir
	if name != "" {
		path = filepath.Join(dir, name)
	}
	var o op
	if mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
		o |= opCreate
	}
	if mask&(unix.IN_DELETE|unix.IN_DELETE_SELF) != 0 {
		o |= opRemove
	}
	if mask&(unix.IN_MOVED_FROM|unix.IN_MOVE_SELF) != 0 {
		o |= opRename
	}
	if o == 0 {
		return true
	}
	return w.send(&event{Name: path, Op: o}, nil)
}

func (w *dirWatcher) send(ev *event, err error) bool {
	if ev != nil {
		select {
		case w.Events <- *ev:
			return true
		case <-w.done:
			return false
		}
	}
	select {
	case w.Errors <- err:
		return true
	case <-w.done:
		return false
	}
}

// cString is a record's name: NUL-padded to a multiple of 16 bytes.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
