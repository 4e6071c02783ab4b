package daemon_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/config"
	"github.com/pagewatch/pagewatch/internal/daemon"
)

var ran bool

var program = daemon.Program[config.Config]{Defaults: config.Default,
	Name:        "demo",
	Description: "demo does nothing, carefully.",
	Default:     "run",
	Commands: []daemon.Command[config.Config]{{Name: "run", Part: config.IngestTail, Summary: "run it",
		Run: func(context.Context, *daemon.Env[config.Config]) error { ran = true; return nil }}},
}

func run(t *testing.T, cfg string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code = daemon.Main(context.Background(), program, append([]string{"--config", path}, args...), &out, &errb, nil)
	return code, out.String(), errb.String()
}

const goodConfig = "nats: {password: s3cr3t, user: u}\ningest:\n  tail:\n    inputs: [{path: /var/log/a.log, site: example.com}]\n"

func TestHelp(t *testing.T) {
	code, out, _ := run(t, "", "--help")
	if code != daemon.ExitOK || !strings.Contains(out, "demo does nothing") || !strings.Contains(out, "-check-config") {
		t.Fatalf("--help: code %d, output:\n%s", code, out)
	}
}

func TestBadConfigNamesKeyAndExits2(t *testing.T) {
	code, _, stderr := run(t, "nats:\n  ur1: x\n")
	if code != daemon.ExitUsage || !strings.Contains(stderr, "nats.ur1 (line 2): unknown key") {
		t.Fatalf("code %d, stderr:\n%s", code, stderr)
	}
	code, _, stderr = run(t, "ingest:\n  tail:\n    batch_lines: 0\n")
	if code != daemon.ExitUsage || !strings.Contains(stderr, "ingest.tail.batch_lines") || !strings.Contains(stderr, "ingest.tail.inputs") {
		t.Fatalf("code %d, stderr:\n%s", code, stderr)
	}
}

func TestCheckConfigMasksSecrets(t *testing.T) {
	code, out, stderr := run(t, goodConfig, "--check-config")
	if code != daemon.ExitOK || !strings.Contains(out, "configuration is valid") {
		t.Fatalf("code %d\n%s\n%s", code, out, stderr)
	}
	if strings.Contains(out+stderr, "s3cr3t") || !strings.Contains(out, "[redacted]") {
		t.Fatalf("secret printed or not masked:\n%s", out)
	}
}

func TestRunsTheDefaultCommand(t *testing.T) {
	ran = false
	if code, _, stderr := run(t, goodConfig); code != daemon.ExitOK || !ran {
		t.Fatalf("code %d, ran %v\n%s", code, ran, stderr)
	}
	if code, _, _ := run(t, goodConfig, "fly"); code != daemon.ExitUsage {
		t.Fatalf("unknown command: code %d", code)
	}
}

func TestTogetherStopsAllWhenOneFails(t *testing.T) {
	boom := errors.New("boom")
	failing := runnerFunc(func(ctx context.Context) error { return boom })
	waiting := runnerFunc(func(ctx context.Context) error { <-ctx.Done(); return nil })
	done := runnerFunc(func(ctx context.Context) error { return nil })
	if err := daemon.Together(waiting, failing, done).Run(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := daemon.Together(waiting, done).Run(ctx); err != nil {
		t.Fatalf("after cancel: %v", err)
	}
}

type runnerFunc func(ctx context.Context) error

func (f runnerFunc) Run(ctx context.Context) error { return f(ctx) }
