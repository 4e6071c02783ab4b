package daemon_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	"github.com/pagewatch/pagewatch/internal/syncbuf"
	"github.com/pagewatch/pagewatch/internal/testcheck"
)

// waitLogged waits for cond; a failure shows the daemon's stderr.
func waitLogged(t *testing.T, stderr *syncbuf.Buffer, what string, cond func() bool) {
	t.Helper()
	testcheck.Eventually(t, 5*time.Second, what, func() error {
		if cond() {
			return nil
		}
		return fmt.Errorf("stderr:\n%s", stderr.String())
	})
}

// A SIGHUP reloads the file: a valid one reaches the command's hook and
// sets the log level, and changes no hook applies (a rotated NATS password
// among them) are named as waiting for a restart, reload after reload; a
// hook that fails makes the reload "failed"; an invalid file is rejected
// with the key named, and the running config stays.
func TestReloadOnSignal(t *testing.T) {
	dir := t.TempDir()
	path, pw := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "nats-password")
	write := func(file, s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	file := func(tail, rest string) string {
		return "nats: {user: u, password: {file: " + pw + "}}\ningest:\n  tail:\n    inputs: [{path: /var/log/a.log, site: example.com}]\n" + tail + rest
	}
	write(pw, "first\n")
	write(path, file("", "mail: {from: a@example.com}\n"))

	envs := make(chan *daemon.Env[config.Config], 1)
	var mu sync.Mutex
	var applied []string // mail.from of each config the hook took
	prog := daemon.Program[config.Config]{Defaults: config.Default, Name: "demo", Default: "run", Commands: []daemon.Command[config.Config]{{
		Name: "run", Part: config.IngestTail,
		Run: func(ctx context.Context, env *daemon.Env[config.Config]) error {
			env.OnReload([]string{"mail"}, func(c config.Config) error {
				if c.Mail.From == "refused@example.com" {
					return errors.New("refused")
				}
				mu.Lock()
				defer mu.Unlock()
				applied = append(applied, c.Mail.From)
				return nil
			})
			envs <- env
			<-ctx.Done()
			return nil
		},
	}}}
	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan os.Signal, 1)
	var stderr syncbuf.Buffer
	done := make(chan int, 1)
	go func() { done <- daemon.Main(ctx, prog, []string{"--config", path}, &bytes.Buffer{}, &stderr, hup) }()
	env := <-envs
	if env.Logger.Enabled(ctx, slog.LevelDebug) {
		t.Fatal("debug enabled before the reload")
	}
	hookCalls := func() int { mu.Lock(); defer mu.Unlock(); return len(applied) }
	reload := func(what string, cond func() bool) {
		t.Helper()
		hup <- syscall.SIGHUP
		waitLogged(t, &stderr, what, cond)
	}
	warnings := func() int { return strings.Count(stderr.String(), "take effect only after a restart") }

	write(path, file("    batch_lines: 100\n", "log: {level: debug}\nmail: {from: b@example.com}\nworker: {concurrency: 9}\n"))
	reload("the first reload", func() bool { return hookCalls() == 1 && warnings() == 1 })
	if applied[0] != "b@example.com" {
		t.Fatalf("hook got mail.from %q", applied[0])
	}
	// The worker section is not the tailer's: no restart is asked for it.
	if out := stderr.String(); !strings.Contains(out, "keys=[ingest.tail.batch_lines]") {
		t.Fatalf("restart warning should name ingest.tail.batch_lines only:\n%s", out)
	}
	if !env.Logger.Enabled(ctx, slog.LevelDebug) {
		t.Fatal("log.level debug not applied")
	}

	// Nothing new in the file, a rotated password: both still pending.
	write(pw, "second\n")
	reload("the second reload", func() bool { return warnings() == 2 })
	if out := stderr.String(); !strings.Contains(out, "keys=\"[ingest.tail.batch_lines nats.password]\"") || strings.Contains(out, "second") {
		t.Fatalf("second warning should name the pending key and the rotated password, not its value:\n%s", out)
	}

	write(path, file("", "mail: {from: refused@example.com}\n"))
	reload("the failed reload", func() bool { return reloads(t, env, "failed") == 1 })
	if got := lastReloadOK(t, env); got != 0 {
		t.Fatalf("last_reload_successful = %v after a failed reload", got)
	}

	write(path, "nats:\n  ur1: x\n")
	reload("the rejection", func() bool { return strings.Contains(stderr.String(), "config reload rejected") })
	if out := stderr.String(); !strings.Contains(out, "nats.ur1 (line 2): unknown key") {
		t.Fatalf("rejection does not name the key:\n%s", out)
	}
	if n := hookCalls(); n != 2 {
		t.Fatalf("the hook took %d configs, want 2: a refused or invalid one got through", n)
	}
	if ok, rejected := reloads(t, env, "ok"), reloads(t, env, "rejected"); ok != 2 || rejected != 1 {
		t.Fatalf("reloads ok %v, rejected %v; want 2 and 1", ok, rejected)
	}
	if got := lastReloadOK(t, env); got != 0 {
		t.Fatalf("last_reload_successful = %v after a rejection", got)
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

func lastReloadOK(t *testing.T, env *daemon.Env[config.Config]) float64 {
	t.Helper()
	mfs, err := env.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "pagewatch_config_last_reload_successful" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("pagewatch_config_last_reload_successful not served")
	return 0
}

// reloads reads pagewatch_config_reloads_total{result} from env's registry.
func reloads(t *testing.T, env *daemon.Env[config.Config], result string) float64 {
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
