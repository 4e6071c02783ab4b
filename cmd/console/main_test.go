package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/internal/metricsdoc"
	"github.com/pagewatch/pagewatch/internal/syncbuf"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
)

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// The daemon as wired: config, NATS, ClickHouse (migrated at start), the
// rules file, every page and API answering, a SIGHUP reloading the rules,
// and a clean stop.
func TestConsoleServesEveryPage(t *testing.T) {
	ns := natstest.Start(t)
	ch := clickhousetest.Start(t)
	dir := t.TempDir()
	rulesPath := filepath.Join(dir, "rules.yaml")
	writeRules := func(name string) {
		src := fmt.Sprintf("rules:\n  - {name: %s, site: example.com, path: /pricing, threshold: 100, window: 1h, notify: {recipients: [a@example.com]}}\n", name)
		if err := os.WriteFile(rulesPath, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeRules("pricing-hourly")
	listen, admin := freePort(t), freePort(t)
	cfg := fmt.Sprintf("nats: {url: %q}\nclickhouse: {addr: [%q], database: pw_console}\nsweeper: {rules_path: %q}\nconsole: {listen: %q, admin_listen: %q, auth: none}\n",
		ns.URL, ch.Addr, rulesPath, listen, admin)
	path := filepath.Join(dir, "pagewatch.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hup := make(chan os.Signal, 1)
	var stderr syncbuf.Buffer
	exit := make(chan int, 1)
	go func() { exit <- daemon.Main(ctx, program, []string{"--config", path}, io.Discard, &stderr, hup) }()

	base := "http://" + listen
	testcheck.Eventually(t, 30*time.Second, "console ready", func() error {
		resp, err := http.Get("http://" + admin + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("readyz %d", resp.StatusCode)
		}
		return nil
	})
	get := func(p string) string {
		t.Helper()
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d\n%s", p, resp.StatusCode, body)
		}
		return string(body)
	}
	for _, p := range []string{"/", "/live", "/rules", "/history", "/dead", "/pipeline", "/silences",
		"/page?site=example.com&path=/pricing&range=24h", "/page?site=example.com&path=/pricing&range=30d", "/static/console.js",
		"/api/v1/live", "/api/v1/rules", "/api/v1/history", "/api/v1/dead", "/api/v1/pipeline", "/api/v1/silences", "/api/v1/page?site=example.com&path=/pricing"} {
		body := get(p)
		if !strings.HasPrefix(p, "/api/") && !strings.HasPrefix(p, "/static/") {
			for _, want := range []string{"<main>", `data-testid="nav-live"`, `data-testid="nav-rules"`, `data-testid="nav-history"`, `data-testid="nav-dead"`, `data-testid="nav-pipeline"`} {
				if !strings.Contains(body, want) {
					t.Errorf("%s lacks %s", p, want)
				}
			}
		}
	}
	if body := get("/rules"); !strings.Contains(body, `data-rule="pricing-hourly"`) {
		t.Errorf("rules page lacks the rule:\n%s", body)
	}
	writeRules("pricing-renamed")
	hup <- syscall.SIGHUP
	testcheck.Eventually(t, 10*time.Second, "rules reloaded on SIGHUP", func() error {
		if body := get("/api/v1/rules"); !strings.Contains(body, "pricing-renamed") {
			return fmt.Errorf("not reloaded yet")
		}
		return nil
	})
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var m bytes.Buffer
	_, _ = m.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(m.String(), `pagewatch_console_request_seconds_count{route="history"} 2`) {
		t.Errorf("request histogram:\n%s", m.String())
	}
	// deploy/metrics.md's console table is what it serves.
	doc, err := metricsdoc.Read(filepath.Join("..", "..", "deploy", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := doc.Of("console")
	if len(names) == 0 {
		t.Fatal("deploy/metrics.md has no console table")
	}
	for _, name := range names {
		if !strings.Contains(m.String(), "\n# TYPE "+name+" ") {
			t.Errorf("documented metric %s is not served", name)
		}
	}
	for _, line := range strings.Split(m.String(), "\n") {
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name = strings.Fields(name)[0]
			if strings.HasPrefix(name, "pagewatch_") && !slices.Contains(names, name) {
				t.Errorf("served metric %s is not in deploy/metrics.md's console table", name)
			}
		}
	}
	cancel()
	select {
	case code := <-exit:
		if code != daemon.ExitOK {
			t.Errorf("exit %d:\n%s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("did not stop")
	}
}
