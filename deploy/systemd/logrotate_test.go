package systemd_test

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/testcheck"
)

const logrotateFile = "logrotate/nginx"

// directives is the logrotate file without comments, one directive a line.
func directives(t *testing.T) []string {
	data, err := os.ReadFile(logrotateFile)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// TestLogrotateDirectives: rename rotation with a reopen signal, never
// copytruncate (its copy-then-truncate window loses lines no tailer can
// recover), and the newest rotated file left uncompressed for a tailer
// still reading it.
func TestLogrotateDirectives(t *testing.T) {
	d := strings.Join(directives(t), "\n")
	has := func(re string) bool { return regexp.MustCompile(`(?m)^` + re).MatchString(d) }
	if has(`copytruncate`) {
		t.Errorf("%s: copytruncate; use create (rename rotation)", logrotateFile)
	}
	if !has(`create\b`) {
		t.Errorf("%s: no create directive: rename rotation needs the new file created", logrotateFile)
	}
	if has(`compress`) && !has(`delaycompress`) {
		t.Errorf("%s: compress without delaycompress compresses the file the tailer may still be reading", logrotateFile)
	}
	if !regexp.MustCompile(`(?s)postrotate.*(USR1|-s reopen|rotate).*endscript`).MatchString(d) {
		t.Errorf("%s: postrotate must tell nginx to reopen its logs (USR1 / nginx -s reopen)", logrotateFile)
	}
}

// TestLogrotateRun rotates a log twice with logrotate itself, the paths
// moved into a temp dir and a stand-in nginx that records USR1: the log
// must be renamed (same inode under its new name, as ingest tail expects),
// recreated with the configured mode, signalled, and compressed only one
// rotation later.
func TestLogrotateRun(t *testing.T) {
	lr := tool(t, "logrotate", "logrotate")
	dir := t.TempDir()
	logs := filepath.Join(dir, "log")
	if err := os.Mkdir(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	pidFile, reopened := filepath.Join(dir, "nginx.pid"), filepath.Join(dir, "reopened")

	// The stand-in nginx: a shell that appends a line per USR1.
	nginx := exec.Command("sh", "-c", `trap 'echo USR1 >> "$0"' USR1; while :; do sleep 0.05; done`, reopened)
	if err := nginx.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nginx.Process.Kill(); _ = nginx.Wait() })
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(nginx.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(logrotateFile)
	if err != nil {
		t.Fatal(err)
	}
	conf := strings.NewReplacer("/var/log/nginx", logs, "/run/nginx.pid", pidFile).Replace(string(data))
	if os.Geteuid() != 0 {
		// Only root may chown the new file to www-data:adm.
		conf = regexp.MustCompile(`(?m)^(\s*create\s+\d+).*$`).ReplaceAllString(conf, "$1")
	}
	confFile, state := filepath.Join(dir, "nginx.conf"), filepath.Join(dir, "state")
	if err := os.WriteFile(confFile, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(lr, "-d", "-s", state, confFile).CombinedOutput(); err != nil {
		t.Fatalf("logrotate -d: %v\n%s", err, out)
	}

	access := filepath.Join(logs, "access.log")
	rotate := func(round int, content string) {
		t.Helper()
		if err := os.WriteFile(access, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		before := inode(t, access)
		if out, err := exec.Command(lr, "-f", "-s", state, confFile).CombinedOutput(); err != nil {
			t.Fatalf("logrotate -f (round %d): %v\n%s", round, err, out)
		}
		if got := inode(t, access+".1"); got != before {
			t.Errorf("round %d: access.log.1 has inode %d, access.log had %d: not a rename", round, got, before)
		}
		if b, _ := os.ReadFile(access + ".1"); string(b) != content {
			t.Errorf("round %d: access.log.1 holds %q, want %q", round, b, content)
		}
		fi, err := os.Stat(access)
		if err != nil || fi.Size() != 0 || fi.Mode().Perm() != 0o640 {
			t.Errorf("round %d: new access.log: %v, want an empty file with mode 0640 (err %v)", round, fi.Mode(), err)
		}
		if os.Geteuid() == 0 {
			st := fi.Sys().(*syscall.Stat_t)
			if u, _ := user.Lookup("www-data"); u != nil && strconv.Itoa(int(st.Uid)) != u.Uid {
				t.Errorf("round %d: new access.log owned by uid %d, want www-data", round, st.Uid)
			}
		}
		testcheck.Eventually(t, 3*time.Second, fmt.Sprintf("round %d: nginx's USR1 (reopen) signal", round), func() error {
			b, _ := os.ReadFile(reopened)
			if n := strings.Count(string(b), "USR1"); n < round {
				return fmt.Errorf("nginx got %d USR1 signals, want %d", n, round)
			}
			return nil
		})
	}
	rotate(1, "first\n")
	if _, err := os.Stat(access + ".1.gz"); err == nil {
		t.Error("access.log.1 compressed at once: delaycompress is missing")
	}
	rotate(2, "second\n")
	if _, err := os.Stat(access + ".2.gz"); err != nil {
		t.Errorf("after two rotations: %v (want the older log compressed)", err)
	}
	entries, _ := os.ReadDir(logs)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	t.Logf("after two rotations: %v", names)
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}
