package daemon_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/config"
	"github.com/pagewatch/pagewatch/internal/daemon"
)

// syncBuffer is stderr shared by the daemon's goroutines and the test.
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

func waitLogged(t *testing.T, stderr *syncBuffer, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; stderr:\n%s", what, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A SIGHUP reloads the file: a valid one reaches the command's hook and
// sets the log level, and changes no hook applies are named as waiting for
// a restart; an invalid one is rejected with the key named, and the
// running config stays.
func TestReloadOnSignal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(goodConfig + "mail: {from: a@example.com}\n")

	envs := make(chan *daemon.Env, 1)
	var mu sync.Mutex
	var applied []config.Config
	prog := daemon.Program{Name: "demo", Default: "run", Commands: []daemon.Command{{
		Name: "run", Part: config.IngestTail,
		Run: func(ctx context.Context, env *daemon.Env) error {
			env.OnReload([]string{"mail"}, func(c config.Config) error {
				mu.Lock()
				defer mu.Unlock()
				applied = append(applied, c)
				return nil
			})
			envs <- env
			<-ctx.Done()
			return nil
		},
	}}}
	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan os.Signal, 1)
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- daemon.Main(ctx, prog, []string{"--config", path}, &bytes.Buffer{}, &stderr, hup) }()
	env := <-envs
	if env.Logger.Enabled(ctx, slog.LevelDebug) {
		t.Fatal("debug enabled before the reload")
	}

	write(goodConfig + "    batch_lines: 100\nlog: {level: debug}\nmail: {from: b@example.com}\nworker: {concurrency: 9}\n")
	hup <- syscall.SIGHUP
	waitLogged(t, &stderr, "the hook", func() bool { mu.Lock(); defer mu.Unlock(); return len(applied) == 1 })
	if got := applied[0].Mail.From; got != "b@example.com" {
		t.Fatalf("hook got mail.from %q", got)
	}
	waitLogged(t, &stderr, "the restart warning", func() bool { return strings.Contains(stderr.String(), "take effect only after a restart") })
	// The worker section is not the tailer's: no restart is asked for it.
	if out := stderr.String(); !strings.Contains(out, "keys=[ingest.tail.batch_lines]") {
		t.Fatalf("restart warning should name ingest.tail.batch_lines only:\n%s", out)
	}
	if !env.Logger.Enabled(ctx, slog.LevelDebug) {
		t.Fatal("log.level debug not applied")
	}

	write("nats:\n  ur1: x\n")
	hup <- syscall.SIGHUP
	waitLogged(t, &stderr, "the rejection", func() bool { return strings.Contains(stderr.String(), "config reload rejected") })
	if out := stderr.String(); !strings.Contains(out, "nats.ur1 (line 2): unknown key") {
		t.Fatalf("rejection does not name the key:\n%s", out)
	}
	mu.Lock()
	n := len(applied)
	mu.Unlock()
	if n != 1 {
		t.Fatalf("an invalid config reached the hook")
	}
	if got := reloads(t, env, "rejected"); got != 1 {
		t.Fatalf("rejected reloads = %v", got)
	}
	cancel()
	if code := <-done; code != daemon.ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
}

func TestLogFlagsOverrideTheConfig(t *testing.T) {
	code, _, stderr := run(t, goodConfig+"log: {format: text}\n", "--log-format", "json", "--log-level", "debug")
	if code != daemon.ExitOK || !strings.Contains(stderr, `"msg":"stopped"`) {
		t.Fatalf("code %d, stderr:\n%s", code, stderr)
	}
	code, _, stderr = run(t, goodConfig, "--log-format", "xml")
	if code != daemon.ExitUsage || !strings.Contains(stderr, "--log-format: must be") {
		t.Fatalf("code %d, stderr:\n%s", code, stderr)
	}
}

// reloads reads pagewatch_config_reloads_total{result} from env's registry.
func reloads(t *testing.T, env *daemon.Env, result string) float64 {
	t.Helper()
	mfs, err := env.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "pagewatch_config_reloads_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("pagewatch_config_reloads_total{result=%q} not served", result)
	return 0
}
