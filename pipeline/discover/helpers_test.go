package discover_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/pipeline/discover"
)

// eventually is how long a change may take to be found. Generous: the
// tests check that things are found, never how fast.
const eventually = 20 * time.Second

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// touch creates the files at the slash-separated paths below root, and
// their directories.
func touch(t testing.TB, root string, rels ...string) {
	t.Helper()
	for _, rel := range rels {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// rel turns found paths back into the slash-separated paths below root.
func rel(t testing.TB, root string, paths []string) []string {
	t.Helper()
	out := make([]string, len(paths))
	for i, p := range paths {
		r, err := filepath.Rel(root, p)
		if err != nil || strings.HasPrefix(r, "..") {
			t.Fatalf("%s is not below %s", p, root)
		}
		out[i] = filepath.ToSlash(r)
	}
	return out
}

func newWatcher(t testing.TB, cfg discover.Config) (*discover.Watcher, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	w, err := discover.New(cfg, testLogger(t), reg)
	if err != nil {
		t.Fatal(err)
	}
	return w, reg
}

// collector records what Run reports.
type collector struct {
	mu    sync.Mutex
	paths []string
	count map[string]int
	last  map[string]discover.Found
}

func (c *collector) found(f discover.Found) {
	p := f.Path
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.count == nil {
		c.count, c.last = map[string]int{}, map[string]discover.Found{}
	}
	c.last[p] = f
	c.paths = append(c.paths, p)
	c.count[p]++
}

func (c *collector) snapshot() ([]string, map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.paths), maps.Clone(c.count)
}

func (c *collector) lastFound(p string) discover.Found {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last[p]
}

// waitFor waits until every path in want was reported, and fails if any
// path was reported twice.
func (c *collector) waitFor(t testing.TB, want ...string) {
	t.Helper()
	testcheck.Eventually(t, eventually, fmt.Sprintf("%d paths reported", len(want)), func() error {
		_, count := c.snapshot()
		var missing []string
		for _, p := range want {
			if count[p] == 0 {
				missing = append(missing, p)
			}
		}
		for p, n := range count {
			if n > 1 {
				t.Fatalf("%s reported %d times", p, n)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("%d of %d paths not reported, e.g. %v", len(missing), len(want), missing[:min(len(missing), 3)])
		}
		return nil
	})
}

// start runs w until the returned stop is called; stop checks that Run
// returned nil soon after its context was cancelled.
func start(t testing.TB, w *discover.Watcher, c *collector) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, c.found) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(eventually):
			t.Errorf("Run did not return %s after its context was cancelled", eventually)
		}
	}
	t.Cleanup(stop)
	return stop
}

// modes are the two ways of finding changes. With inotify the poll is an
// hour away, so what is found within the test was found through events.
func modes() map[string]func(*discover.Config) {
	return map[string]func(*discover.Config){
		"inotify": func(c *discover.Config) { c.Inotify = true; c.PollInterval = time.Hour },
		"polling": func(c *discover.Config) { c.Inotify = false; c.PollInterval = 20 * time.Millisecond; c.Debounce = 0 },
	}
}

// metric returns the value of the counter or gauge name with the given
// label value (or none), or -1 when there is none.
func metric(t testing.TB, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label != "" && (len(m.GetLabel()) == 0 || m.GetLabel()[0].GetValue() != label) {
				continue
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}
