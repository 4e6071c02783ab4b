package deploy_test

// Runs `make demo`'s script as a user would (no exit setting: it keeps
// running until Ctrl-C), waits for its story, and looks at it: the
// first surge email names its referrer, and the surge's fire, escalation
// and "back to normal", the quiet page, the new page and the threshold
// rule each reach an email; the rules it ran are the shipped file with
// other recipients. Then the console in Chromium (demo_browser_test.go's
// checks, a screenshot each), and a Ctrl-C to the script's process
// group, after which it has exited and every demo port is free. It logs
// the script's timings and asserts none.

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/browsertest"
)

// demoPorts are every port run.sh listens on (127.0.0.1): NATS, its
// monitoring, ClickHouse native and HTTP, the daemons' admin ports and
// the console.
var demoPorts = []int{14222, 18222, 19000, 18123, 19101, 19102, 19103, 19104, 19105, 19106}

// storyTimeout bounds run.sh's start (a build with a cold cache, the
// history, the backfill) and its story: a couple of minutes on a loaded
// 2-core machine, its own limits 60 s and 180 s after going live.
const storyTimeout = 5 * time.Minute

// minBackfillHits is well under the views in the demo's five weeks of
// history (internal/demotraffic), and far over what a backfill said
// loaded too early holds.
const minBackfillHits = 100000

// syncBuffer is the script's output, written by exec's copier and read
// by the test while the script runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestDemoTellsItsStory(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo takes a minute or two: not with -short")
	}
	if _, err := exec.LookPath("clickhouse-server"); err != nil {
		if _, err := os.Stat("/usr/sbin/clickhouse-server"); err != nil {
			testcheck.SkipOutsideCI(t, "clickhouse-server not installed: `bash .ci/install-test-deps clickhouse` (make test-deps) installs it")
		}
	}
	// The demo's ports are fixed: a demo already running keeps them, and
	// its state in .demo is not this test's to stop.
	if c, err := net.DialTimeout("tcp", "127.0.0.1:14222", time.Second); err == nil {
		c.Close()
		testcheck.SkipOutsideCI(t, "a demo is running (127.0.0.1:14222 answers): stop it (Ctrl-C) to run this test")
	}
	// The browser first: a missing one skips (fails under CI) before
	// the demo's minute.
	br := browsertest.Start(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command("bash", filepath.Join(root, "deploy/demo/run.sh"))
	cmd.Env = append(os.Environ(), "DEMO_EXIT_AFTER=", "DEMO_EXIT_AFTER_MAIL=")
	// Its own process group, as a terminal's job: the Ctrl-C below goes
	// to the group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	if err := startHearingInterrupt(cmd); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() { // a failed test: stop the demo (its cleanup stops the rest)
		if stopped {
			return
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(90 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})

	// The story, as the script reports it; it keeps running after.
	storyRE := regexp.MustCompile(`the story is complete [0-9.]+ s after going live, [0-9.]+ s after the command`)
	deadline := time.Now().Add(storyTimeout)
	for !storyRE.MatchString(out.String()) {
		select {
		case err := <-exited:
			stopped = true
			t.Fatalf("run.sh exited (%v) after %s before its story was complete:\n%s", err, time.Since(start).Round(time.Second), out.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v, run.sh has not said its story is complete:\n%s", storyTimeout, out.String())
		}
	}
	storyAt := time.Since(start)
	text := out.String()
	for _, re := range []string{
		`going live on a demo clock .*\(([0-9.]+)s\)`,
		`the email was written [0-9.]+ s after going live, [0-9.]+ s after the command \(backfill: [0-9.]+ s\)`,
		`backfill: read in [0-9.]+ s, loaded in [0-9.]+ s; ClickHouse has [0-9]+ hits`,
		storyRE.String(),
	} {
		m := regexp.MustCompile(re).FindString(text)
		if m == "" {
			t.Errorf("no %q in the output:\n%s", re, text)
		}
		t.Log(m)
	}
	// The sweeper must start on the whole history: a backfill said loaded
	// while ClickHouse had almost nothing judged against no normal.
	if m := regexp.MustCompile(`ClickHouse has ([0-9]+) hits`).FindStringSubmatch(text); m != nil {
		if n, _ := strconv.Atoi(m[1]); n < minBackfillHits {
			t.Errorf("the backfill was said to be loaded with %d hits in ClickHouse, want at least %d", n, minBackfillHits)
		}
	}
	for _, want := range []string{
		"mostly from news.ycombinator.com", // the first surge email names its referrer
		"/blog/sqlite-at-scale rose to 4",
		"/blog/sqlite-at-scale is back to normal",
		"/docs/install went quiet",
		"/blog/launch-week took off",
		"/pricing passed 100 views in 1h",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in the output:\n%s", want, text)
		}
	}
	shipped, err := os.ReadFile(filepath.Join(root, "deploy/rules/spike-default.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ran, err := os.ReadFile(filepath.Join(root, ".demo/rules/spike-default.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if string(bytes.ReplaceAll(ran, []byte("[you@example.com]"), []byte("[ops@example.com]"))) != strings.TrimRight(string(shipped), "\n")+"\n" {
		t.Errorf("the demo ran rules other than the shipped file's (recipients aside):\n%s", ran)
	}

	// The console, while the demo runs.
	lookStart := time.Now()
	lookAtConsole(t, br, root)
	t.Logf("timings: the story complete %s after starting run.sh; the console looked at in %s",
		storyAt.Round(100*time.Millisecond), time.Since(lookStart).Round(100*time.Millisecond))

	// Ctrl-C: SIGINT to the script's process group, as a terminal sends it.
	intAt := time.Now()
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Errorf("run.sh after Ctrl-C: %v, want exit 0\n%s", err, out.String())
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("run.sh still running 90 s after Ctrl-C:\n%s", out.String())
	}
	t.Logf("timings: run.sh exited %s after Ctrl-C", time.Since(intAt).Round(100*time.Millisecond))
	if tail := out.String()[len(text):]; !strings.Contains(tail, "stopping NATS and ClickHouse") {
		t.Errorf("after Ctrl-C, no %q in the output:\n%s", "stopping NATS and ClickHouse", tail)
	}
	var busy []string
	for _, port := range demoPorts {
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
			c.Close()
			busy = append(busy, fmt.Sprint(port))
		}
	}
	if len(busy) > 0 {
		t.Errorf("after run.sh exited, ports still answer: %s", strings.Join(busy, " "))
	}
}

// startHearingInterrupt starts cmd with SIGINT's default action even when
// this process ignores it (a test run in a shell's background, as by
// `make test &` or some CI runners): bash cannot trap a signal ignored
// when it started, so run.sh would not hear the Ctrl-C. While the Go
// runtime handles SIGINT, a child starts with its default action.
func startHearingInterrupt(cmd *exec.Cmd) error {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT)
	defer signal.Reset(syscall.SIGINT)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start run.sh: %w", err)
	}
	return nil
}
