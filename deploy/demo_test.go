package deploy_test

// Runs `make demo`'s script to the end of its story (DEMO_EXIT_AFTER=story)
// and checks what the demo promises: the first surge email names its
// referrer, and the surge's fire, escalation and "back to normal", the
// quiet page, the new page and the threshold rule each reach an email;
// the rules it ran are the shipped file with other recipients. It logs
// the script's timings.

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestDemoTellsItsStory(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo takes a minute or two: not with -short")
	}
	if _, err := exec.LookPath("clickhouse-server"); err != nil {
		if _, err := os.Stat("/usr/sbin/clickhouse-server"); err != nil {
			t.Skip("clickhouse-server not installed (make test-deps installs it)")
		}
	}
	// The demo's ports are fixed: a demo already running keeps them, and
	// its state in .demo is not this test's to stop.
	if c, err := net.DialTimeout("tcp", "127.0.0.1:14222", time.Second); err == nil {
		c.Close()
		t.Skip("a demo is running (127.0.0.1:14222 answers): not starting another")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join(root, "deploy/demo/run.sh"))
	cmd.Env = append(os.Environ(), "DEMO_EXIT_AFTER=story", "DEMO_EXIT_AFTER_MAIL=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	text := out.String()
	if err != nil {
		t.Fatalf("run.sh: %v after %s\n%s", err, time.Since(start).Round(time.Second), text)
	}
	for _, re := range []string{
		`the email was written [0-9.]+ s after going live, [0-9.]+ s after the command \(backfill: [0-9.]+ s\)`,
		`backfill: read in [0-9.]+ s, loaded in [0-9.]+ s`,
		`the story is complete [0-9.]+ s after going live, [0-9.]+ s after the command`,
	} {
		m := regexp.MustCompile(re).FindString(text)
		if m == "" {
			t.Errorf("no %q in the output:\n%s", re, text)
		}
		t.Log(m)
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
}
