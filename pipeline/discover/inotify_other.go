//go:build !linux

package discover

import "errors"

// dirWatcher exists on Linux only; elsewhere files are found by polling.
type dirWatcher struct {
	Events chan event
	Errors chan error
}

func newDirWatcher() (*dirWatcher, error) {
	return nil, errors.New("inotify is Linux only")
}

func (w *dirWatcher) Add(string) error    { return errors.ErrUnsupported }
func (w *dirWatcher) Remove(string) error { return nil }
func (w *dirWatcher) WatchList() []string { return nil }
func (w *dirWatcher) Close() error        { return nil }
