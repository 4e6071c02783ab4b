package testcheck_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/testcheck"
)

// recorder stands in for a test: it records a Fatal or a Skip and, as
// the real ones do, ends the goroutine that called it.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatal(args ...any) {
	r.fatal = fmt.Sprint(args...)
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skip(args ...any) {
	r.skip = fmt.Sprint(args...)
	runtime.Goexit()
}

// record runs f as a test would run and returns what it recorded.
func record(f func(tb testing.TB)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	var calls atomic.Int64
	start := time.Now()
	r := record(func(tb testing.TB) {
		testcheck.Eventually(tb, 10*time.Second, "the fifth call", func() bool { return calls.Add(1) >= 5 })
	})
	if r.fatal != "" || calls.Load() != 5 {
		t.Fatalf("fatal %q after %d calls", r.fatal, calls.Load())
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("five polls took %s", took)
	}
}

func TestEventuallyNamesWhatItAwaited(t *testing.T) {
	r := record(func(tb testing.TB) {
		testcheck.Eventually(tb, 30*time.Millisecond, "the second mail", func() bool { return false })
	})
	if want := "after 30ms, still waiting for the second mail"; r.fatal != want {
		t.Errorf("fatal %q, want %q", r.fatal, want)
	}
	var n int
	r = record(func(tb testing.TB) {
		testcheck.Eventually(tb, 30*time.Millisecond, "2000 hits", func() error {
			n++
			return fmt.Errorf("%d hits", n)
		})
	})
	if want := fmt.Sprintf("after 30ms, still waiting for 2000 hits: %d hits", n); r.fatal != want || n < 2 {
		t.Errorf("fatal %q after %d calls, want %q: the last error", r.fatal, n, want)
	}
}

func TestEventuallyChecksOnceMoreAtTheDeadline(t *testing.T) {
	start := time.Now()
	r := record(func(tb testing.TB) {
		testcheck.Eventually(tb, 20*time.Millisecond, "the deadline", func() bool {
			return time.Since(start) >= 20*time.Millisecond
		})
	})
	if r.fatal != "" {
		t.Fatal(r.fatal)
	}
}

func TestPoll(t *testing.T) {
	if testcheck.Poll(20*time.Millisecond, func() bool { return false }) {
		t.Error("Poll of a false condition reported true")
	}
	var calls int
	if !testcheck.Poll(time.Second, func() bool { calls++; return calls == 3 }) {
		t.Error("Poll of a condition that comes true reported false")
	}
}

func TestSkipOutsideCI(t *testing.T) {
	t.Setenv("CI", "")
	r := record(func(tb testing.TB) { testcheck.SkipOutsideCI(tb, "no frobnicator: apt-get install frob") })
	if r.fatal != "" || !strings.HasPrefix(r.skip, "no frobnicator: apt-get install frob (skipping") {
		t.Errorf("without $CI: fatal %q, skip %q", r.fatal, r.skip)
	}
	t.Setenv("CI", "true")
	r = record(func(tb testing.TB) { testcheck.SkipOutsideCI(tb, "no frobnicator: apt-get install frob") })
	if r.skip != "" || !strings.HasPrefix(r.fatal, "no frobnicator: apt-get install frob (failing") {
		t.Errorf("with $CI: fatal %q, skip %q", r.fatal, r.skip)
	}
}

func TestRequire(t *testing.T) {
	t.Setenv("CI", "1")
	if r := record(func(tb testing.TB) { testcheck.Require(tb, true, "x", "y") }); r.fatal != "" || r.skip != "" {
		t.Errorf("met: fatal %q, skip %q", r.fatal, r.skip)
	}
	r := record(func(tb testing.TB) { testcheck.Require(tb, false, "max_queued_events is 1000000", "lower it") })
	if !strings.HasPrefix(r.fatal, "max_queued_events is 1000000: lower it") {
		t.Errorf("unmet under CI: fatal %q, skip %q", r.fatal, r.skip)
	}
}

func TestRequireTool(t *testing.T) {
	t.Setenv("CI", "")
	var got string
	r := record(func(tb testing.TB) { got = testcheck.RequireTool(tb, "sh", "apt-get install dash") })
	if r.skip != "" || r.fatal != "" || !filepath.IsAbs(got) {
		t.Errorf("sh: %q, fatal %q, skip %q", got, r.fatal, r.skip)
	}
	// A non-root PATH lacks the sbin directories.
	t.Setenv("PATH", "/nonexistent")
	if _, err := os.Stat("/usr/sbin/nologin"); err == nil {
		r := record(func(tb testing.TB) { got = testcheck.RequireTool(tb, "nologin", "apt-get install login") })
		if got != "/usr/sbin/nologin" {
			t.Errorf("nologin outside PATH: %q, fatal %q, skip %q", got, r.fatal, r.skip)
		}
	}
	r = record(func(tb testing.TB) { testcheck.RequireTool(tb, "pagewatch-no-such-tool", "apt-get install frob") })
	if !strings.Contains(r.skip, "pagewatch-no-such-tool: not found") || !strings.Contains(r.skip, "install it: apt-get install frob") {
		t.Errorf("missing tool: skip %q", r.skip)
	}
	t.Setenv("CI", "true")
	r = record(func(tb testing.TB) { testcheck.RequireTool(tb, "pagewatch-no-such-tool", "apt-get install frob") })
	if r.skip != "" || !strings.Contains(r.fatal, "install it: apt-get install frob") {
		t.Errorf("missing tool under CI: fatal %q, skip %q", r.fatal, r.skip)
	}
}

// As root this runs again as nobody; either way the body runs without
// privileges, and the subtest name picks just it.
func TestRerunAsNobody(t *testing.T) {
	root := os.Geteuid() == 0
	t.Run("unprivileged", func(t *testing.T) {
		if testcheck.RerunAsNobody(t) {
			if !root {
				t.Fatal("reran although not root")
			}
			return
		}
		if os.Geteuid() == 0 {
			t.Fatal("running as root")
		}
		if os.Getenv("PAGEWATCH_TESTCHECK_NOBODY") != "" && (os.Getuid() != testcheck.Nobody || os.Getgid() != testcheck.Nobody) {
			t.Fatalf("child runs as uid %d gid %d, want %d", os.Getuid(), os.Getgid(), testcheck.Nobody)
		}
		if groups, _ := os.Getgroups(); len(groups) > 1 || len(groups) == 1 && groups[0] != testcheck.Nobody {
			t.Fatalf("supplementary groups %v", groups)
		}
		locked := filepath.Join(t.TempDir(), "locked")
		if err := os.Mkdir(locked, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := os.ReadDir(locked); !errors.Is(err, os.ErrPermission) {
			t.Fatalf("read a directory without permission: %v", err)
		}
	})
	// As from a checkout in a directory only root may enter: the child
	// does not start in the test's directory.
	t.Run("private", func(t *testing.T) {
		if root {
			private := t.TempDir()
			if err := os.Chmod(private, 0o700); err != nil {
				t.Fatal(err)
			}
			t.Chdir(private)
		}
		if testcheck.RerunAsNobody(t) {
			return
		}
		if os.Geteuid() == 0 {
			t.Fatal("running as root")
		}
	})
}
