package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
)

func runWorker(t *testing.T, cfg string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pagewatch.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code = daemon.Main(context.Background(), program, append([]string{"--config", path}, args...), &out, &errb, nil)
	return code, out.String(), errb.String()
}

func TestSilenceCommands(t *testing.T) {
	ns := natstest.Start(t)
	cfg := fmt.Sprintf("nats: {url: %q}\n", ns.URL)

	code, out, errs := runWorker(t, cfg, "silence", "add", "--site", "example.com", "--page", "/blog/**", "--label", "team=web",
		"--for", "2h", "--author", "ann", "--comment", "launch day")
	if code != 0 {
		t.Fatalf("add: exit %d: %s", code, errs)
	}
	id := strings.TrimSpace(out)
	if code, _, errs := runWorker(t, cfg, "silence", "add", "--site", "example.com", "--author", "ann"); code != daemon.ExitUsage || !strings.Contains(errs, "give --for or --ends") {
		t.Errorf("add without an end: exit %d: %s", code, errs)
	}
	code, out, errs = runWorker(t, cfg, "silence", "list")
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "active") || !strings.Contains(out, "label:team=web page=/blog/** site=example.com") || !strings.Contains(out, "launch day") {
		t.Fatalf("list: exit %d:\n%s%s", code, out, errs)
	}
	if code, out, errs := runWorker(t, cfg, "silence", "expire", id); code != 0 || !strings.Contains(out, id+" ended") {
		t.Fatalf("expire: exit %d: %s%s", code, out, errs)
	}
	if code, _, errs := runWorker(t, cfg, "silence", "expire", "0123456789abcdef"); code != daemon.ExitUsage || !strings.Contains(errs, "no such silence") {
		t.Errorf("expire of nothing: exit %d: %s", code, errs)
	}
	if _, out, _ := runWorker(t, cfg, "silence", "list"); strings.Contains(out, id) {
		t.Errorf("an ended silence is listed without --all:\n%s", out)
	}
	if _, out, _ := runWorker(t, cfg, "silence", "list", "--all"); !strings.Contains(out, id) || !strings.Contains(out, "ended") {
		t.Errorf("list --all:\n%s", out)
	}
	if code, _, errs := runWorker(t, cfg, "silence", "mute"); code != daemon.ExitUsage || !strings.Contains(errs, "unexpected arguments") {
		t.Errorf("unknown verb: exit %d: %s", code, errs)
	}
	if code, _, errs := runWorker(t, cfg, "run", "extra"); code != daemon.ExitUsage || !strings.Contains(errs, `unexpected argument "extra"`) {
		t.Errorf("run with an argument: exit %d: %s", code, errs)
	}
}
