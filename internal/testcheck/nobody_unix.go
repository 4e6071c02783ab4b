//go:build unix

package testcheck

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Nobody is the user and group RerunAsNobody runs a test as.
const Nobody = 65534

// rerunEnv marks the child process RerunAsNobody starts.
const rerunEnv = "PAGEWATCH_TESTCHECK_NOBODY"

// RerunAsNobody is for a test that means nothing as root, such as one
// that a directory without read permission cannot be read: root reads
// every directory. Called first in the test:
//
//	if testcheck.RerunAsNobody(t) {
//		return
//	}
//
// it returns false when the process is not root, and the test goes on.
// As root, it runs this test (only this one, subtests named by t.Name()
// included) again in a child process of the test binary as user and
// group nobody (65534), with no supplementary groups and so no
// privileges, fails t with the child's output if that test fails or does
// not run, and returns true: the caller returns.
//
// The child can reach nothing that only root may, so it is given all it
// needs in a directory of its own under $TMPDIR that nobody may enter:
// the binary, linked or copied there, since go test builds it in a
// directory only root may enter; a $TMPDIR and $HOME of its own, where
// t.TempDir in the child is made; and its working directory, an empty
// directory. That is not the test's package directory, which nobody
// cannot enter in a checkout under /root or any other directory only
// root may enter. So a test rerun as nobody cannot read files by paths
// relative to its package (testdata): it must make what it reads.
func RerunAsNobody(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		return false
	}
	if os.Getenv(rerunEnv) != "" {
		t.Fatalf("testcheck: still root in the child RerunAsNobody started")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("testcheck: the test binary: %v", err)
	}
	dir, err := os.MkdirTemp("", "testcheck-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, Nobody, Nobody); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(exe))
	if err := linkOrCopy(exe, bin); err != nil {
		t.Fatalf("testcheck: place the test binary where nobody may run it: %v", err)
	}
	wd := filepath.Join(dir, "wd")
	if err := os.Mkdir(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(wd, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}

	// Only this test: each level of its name, quoted and anchored.
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	args := []string{"-test.run=" + strings.Join(parts, "/"), "-test.v=true", "-test.count=1"}
	if d, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout="+time.Until(d).Round(time.Second).String())
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = wd
	cmd.Env = []string{rerunEnv + "=1", "TMPDIR=" + tmp, "HOME=" + tmp}
	for _, kv := range os.Environ() {
		// The child could not write coverage data where root's may go.
		if k, _, _ := strings.Cut(kv, "="); k != "TMPDIR" && k != "HOME" && k != "GOCOVERDIR" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if exited := errors.As(err, &exitErr); err != nil && !exited {
		t.Fatalf("testcheck: %s as nobody (uid %d): %v\n"+
			"nobody could not start the test binary in %s: each directory above it must be one nobody may enter "+
			"and it must not be on a noexec mount; set $TMPDIR to a directory that is (it is %q)",
			t.Name(), Nobody, err, dir, os.Getenv("TMPDIR"))
	}
	if err != nil {
		t.Fatalf("testcheck: %s as nobody (uid %d): %v\n%s", t.Name(), Nobody, err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()+" ") {
		t.Fatalf("testcheck: %s as nobody (uid %d) did not pass:\n%s", t.Name(), Nobody, out)
	}
	t.Logf("ran as nobody (uid %d) in a child process:\n%s", Nobody, out)
	return true
}

// linkOrCopy makes dst the file src, hard-linked if it can be.
func linkOrCopy(src, dst string) error {
	if fi, err := os.Stat(src); err == nil && fi.Mode().Perm()&0o005 == 0o005 {
		if err := os.Link(src, dst); err == nil {
			return nil
		}
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Chmod(0o755); err != nil { // whatever the umask
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}
