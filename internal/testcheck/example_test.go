package testcheck_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/testcheck"
)

// t stands for the *testing.T of the test each example would be in; the
// examples that use it are compiled, not run.
var t *testing.T

// A condition that reports whether it holds: on timeout the test fails
// with "after 10s, still waiting for the first mail".
func ExampleEventually() {
	var mails atomic.Int64
	go func() { mails.Add(1) }() // the code under test, sending
	testcheck.Eventually(t, 10*time.Second, "the first mail", func() bool {
		return mails.Load() >= 1
	})
}

// A condition that says what it sees: on timeout the test fails with
// "after 30s, still waiting for every hit in ClickHouse: 1200 hits, want 2000".
func ExampleEventually_error() {
	var loaded atomic.Int64
	go func() { loaded.Store(2000) }() // the loader, loading
	testcheck.Eventually(t, 30*time.Second, "every hit in ClickHouse", func() error {
		if n := loaded.Load(); n != 2000 {
			return fmt.Errorf("%d hits, want 2000", n)
		}
		return nil
	})
}

// A wait that may end either way.
func ExamplePoll() {
	var inserting atomic.Bool
	go func() { inserting.Store(true) }()
	if testcheck.Poll(2*time.Second, inserting.Load) {
		fmt.Println("killed during an insert")
	}
	// Output: killed during an insert
}

// A test that needs a program: under CI its absence fails the test,
// elsewhere it skips it, saying how to install it.
func ExampleRequireTool() {
	logrotate := testcheck.RequireTool(t, "logrotate", "apt-get install logrotate")
	_ = logrotate // run it
}

// A test that needs something of the machine other than a program.
func ExampleRequire() {
	_, err := os.Stat("/proc/self/mountinfo")
	testcheck.Require(t, err == nil, "no /proc/self/mountinfo", "mount /proc")
}

// A test of what only a user without privileges meets: as root, it runs
// as nobody in a child process.
func ExampleRerunAsNobody() {
	if testcheck.RerunAsNobody(t) {
		return
	}
	dir := filepath.Join(t.TempDir(), "locked")
	if err := os.Mkdir(dir, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadDir(dir); !errors.Is(err, os.ErrPermission) {
		t.Fatalf("read a directory without permission: %v", err)
	}
}
