package daemon_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/config"
	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/internal/syncbuf"
	"github.com/pagewatch/pagewatch/internal/testcheck"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// The admin endpoints answer from start-up: /healthz at once, /readyz
// "starting" until the command runs, its dependencies while it runs, and
// "shutting down" once SIGTERM arrives, while it drains.
func TestReadyzFollowsTheLifecycle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(goodConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr syncbuf.Buffer
	step := make(chan string)
	var dep atomic.Pointer[error]
	refused := errors.New("refused")
	dep.Store(&refused)
	prog := daemon.Program[config.Config]{Defaults: config.Default, Name: "demo", Default: "run", Commands: []daemon.Command[config.Config]{{
		Name: "run", Part: config.IngestTail,
		Listen: func(config.Config) string { return "127.0.0.1:0" },
		Run: func(ctx context.Context, env *daemon.Env[config.Config]) error {
			<-step // "connecting"
			env.Ready("nats", func(context.Context) error { return *dep.Load() })
			<-step
			return env.Serve(ctx, runnerFunc(func(ctx context.Context) error {
				<-ctx.Done()
				<-step // draining
				return nil
			}))
		},
	}}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- daemon.Main(ctx, prog, []string{"--config", path}, &bytes.Buffer{}, &stderr, nil) }()

	re := regexp.MustCompile(`admin endpoints serving.* addr=(\S+)`)
	var addr string
	waitLogged(t, &stderr, "the admin address", func() bool {
		m := re.FindStringSubmatch(stderr.String())
		if m != nil {
			addr = "http://" + m[1]
		}
		return m != nil
	})
	expect := func(path string, code int, body string) {
		t.Helper()
		testcheck.Eventually(t, 5*time.Second, fmt.Sprintf("%s to answer %d with %q", path, code, body), func() error {
			c, b := get(t, addr+path)
			if c == code && strings.Contains(b, body) {
				return nil
			}
			return fmt.Errorf("%s: %d %q, want %d with %q", path, c, b, code, body)
		})
	}
	expect("/healthz", 200, "ok")
	expect("/readyz", 503, "lifecycle: starting")
	step <- "connected"
	expect("/readyz", 503, "nats: refused")
	var ok error
	dep.Store(&ok)
	step <- "serve"
	expect("/readyz", 200, "lifecycle: ok\nnats: ok")
	cancel()
	expect("/readyz", 503, "lifecycle: shutting down")
	expect("/healthz", 200, "ok")
	step <- "drained"
	if code := <-done; code != daemon.ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
}
