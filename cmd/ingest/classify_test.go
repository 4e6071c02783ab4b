package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/internal/realdata"
)

// `ingest tail --classify` reads the real log with no NATS running (the
// config names an address nothing listens on) and prints its classes.
func TestTailClassifyCommand(t *testing.T) {
	log := realdata.Path(t, realdata.ApacheLog)
	cfg := writeConfig(t, "nats: {url: 'nats://127.0.0.1:1'}\ningest:\n  tail:\n"+
		"    inputs: [{path: /var/log/nginx/access.log, site: example.com}]\n"+
		"    pages: {count_classes: [human]}\n")
	var stdout, stderr bytes.Buffer
	code := daemon.Main(context.Background(), program, []string{"--config", cfg, "tail", "--classify", log}, &stdout, &stderr, nil)
	if code != daemon.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"7036   70.4%  human (counted)",
		"2650   26.5%  bot (not counted)",
		"314    3.1%  unknown (not counted)",
		"10000          (all lines)",
		"     364  UniversalFeedParser/4.2-pre-314-svn +http://feedparser.org/",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	code = daemon.Main(context.Background(), program, []string{"--config", cfg, "tail", "--classify", log, "--classify-format", "apache"}, &stdout, &stderr, nil)
	if code != daemon.ExitUsage || !strings.Contains(stderr.String(), `unknown format "apache"`) {
		t.Errorf("an unknown format: exit %d, %s", code, stderr.String())
	}
}

// Without a config file, --classify runs on the defaults: the file is
// its one input, and nothing else is needed.
func TestTailClassifyNeedsNoConfig(t *testing.T) {
	t.Setenv("PAGEWATCH_CONFIG", "")
	log := realdata.Path(t, realdata.ApacheLog)
	var stdout, stderr bytes.Buffer
	code := daemon.Main(context.Background(), program, []string{"tail", "--classify", log}, &stdout, &stderr, nil)
	if code != daemon.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if out := stdout.String(); !strings.Contains(out, "2650   26.5%  bot (not counted)") || !strings.Contains(out, "314    3.1%  unknown (counted)") {
		t.Errorf("output:\n%s", out)
	}
}
