package discover

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/pagewatch/pagewatch/internal/syncbuf"
	"github.com/pagewatch/pagewatch/internal/testcheck"
)

func TestCompileInclude(t *testing.T) {
	for p, want := range map[string]string{
		"/var/log/nginx/access.log": "/var/log/nginx [access.log]",
		"/var/log/*/access.log":     "/var/log [* access.log]",
		"/*.log":                    "/ [*.log]",
		"/var/log/**":               "/var/log [** *]",
		"/var/**/**/x/**/*.log":     "/var [** x ** *.log]",
		`/var/a\*b/c`:               `/var [a\*b c]`,
	} {
		in, err := compileInclude(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		var segs []string
		for _, s := range in.segs {
			if s.kind == segAny {
				segs = append(segs, "**")
			} else {
				segs = append(segs, s.text)
			}
		}
		if got := in.root + " [" + strings.Join(segs, " ") + "]"; got != want {
			t.Errorf("%s: %s, want %s", p, got, want)
		}
	}
}

// The shortcut for "*tail" base patterns agrees with path.Match.
func TestExcludeTailShortcut(t *testing.T) {
	pats := append(RotatedExcludes(), `*[\]]x`, `*[^a]`, "*é?", "*[a-c]-?.log", "*.log")
	names := []string{"a", "access.log", "access.log.1", "access.log.12", "access.log.123", "access.log.1234",
		"access.log-20261122", "x-2026112206", "x-2026-11-22", "a.gz", "gz", ".gz", "a*", "]x", "a]x", "b", "aé1", "é",
		"b-1.log", "d-1.log", "access.log.2.gz", "a.zst", "access.log-2026112"}
	for _, p := range pats {
		ex, err := compileExclude(p)
		if err != nil {
			t.Fatal(err)
		}
		if ex.tail == "" {
			t.Fatalf("%s: no shortcut", p)
		}
		for _, n := range names {
			want, _ := path.Match(p, n)
			if got := ex.excludesFile("/d/" + n); got != want {
				t.Errorf("%q on %q: %v, path.Match says %v", p, n, got, want)
			}
		}
	}
}

// Reaching the watch limit logs once and leaves polling to find files.
func TestWatchLimitFallsBackToPolling(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	cfg := DefaultConfig()
	cfg.Paths = []string{root + "/**/*.log"}
	cfg.PollInterval = 20 * time.Millisecond
	w, err := New(cfg, slog.New(slog.NewTextHandler(&logs, nil)), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	w.testAdd = func(string) error { return syscall.ENOSPC }
	var mu sync.Mutex
	var found []string
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- w.Run(ctx, func(f Found) { mu.Lock(); found = append(found, f.Path); mu.Unlock() })
	}()
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sub/b.log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "a.log"), filepath.Join(root, "sub/b.log")}
	testcheck.Eventually(t, 20*time.Second, "both files found by polling", func() error {
		mu.Lock()
		got := slices.Clone(found)
		mu.Unlock()
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("found %q, want %q", got, want)
		}
		return nil
	})
	time.Sleep(100 * time.Millisecond) // some more polls
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "watch limit reached"); n != 1 {
		t.Errorf("limit logged %d times:\n%s", n, logs.String())
	}
	if v := value(t, w.m.watchErrors.WithLabelValues("limit")); v != 1 {
		t.Errorf("limit errors: %v", v)
	}
	if v := value(t, w.m.inotify); v != 0 {
		t.Errorf("inotify_active: %v", v)
	}
}

func value(t *testing.T, m prometheus.Metric) float64 {
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	return out.Gauge.GetValue()
}
