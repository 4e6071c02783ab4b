// Package testcheck is what pagewatch's tests use to wait for something
// and to require something of the machine they run on:
//
//   - Eventually polls a condition until it holds, or fails the test
//     saying what it waited for and for how long (and, for a condition
//     that returns an error, what it saw last). Poll is the same wait for
//     a caller that carries on either way.
//   - SkipOutsideCI is the only way a test skips because of its
//     environment: under CI ($CI set, as CI services and .ci/run set it)
//     it fails instead, so a CI machine that lacks a server, a tool or a
//     kernel setting cannot pass by skipping. Require and RequireTool are
//     the usual cases of it.
//   - RerunAsNobody runs a test that means nothing as root (one about
//     permissions) as the user nobody when the tests run as root, which is
//     how CI runs them.
//
// It imports nothing of pagewatch's, so every test-support package (the
// test servers, realdata, sqlcheck, promql) and every test can use it.
package testcheck

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// InCI reports whether the tests run under CI: $CI is set and not empty.
func InCI() bool {
	return os.Getenv("CI") != ""
}

// SkipOutsideCI skips the test, or fails it under CI, because the
// environment lacks something. why says what is missing and how to get
// it, e.g. "clickhouse-server not found: apt-get install clickhouse-server".
func SkipOutsideCI(tb testing.TB, why string) {
	tb.Helper()
	if InCI() {
		tb.Fatal(why + " (failing rather than skipping: $CI is set)")
	}
	tb.Skip(why + " (skipping: $CI is unset; under CI this fails)")
}

// Require calls SkipOutsideCI unless ok, with the reason "what: how":
// what is the missing condition, how is how to meet it.
func Require(tb testing.TB, ok bool, what, how string) {
	tb.Helper()
	if !ok {
		SkipOutsideCI(tb, what+": "+how)
	}
}

// sbin are the directories searched after $PATH: a non-root user's PATH
// often lacks them, and systemd-analyze or logrotate live there.
var sbin = []string{"/usr/local/sbin", "/usr/sbin", "/sbin"}

// RequireTool returns the absolute path of the program name, found in
// $PATH or else in /usr/local/sbin, /usr/sbin or /sbin (a name holding a
// slash is taken as a path). When there is none it calls SkipOutsideCI,
// saying howToInstall, e.g. "apt-get install logrotate".
func RequireTool(tb testing.TB, name, howToInstall string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err != nil && !strings.Contains(name, "/") {
		for _, dir := range sbin {
			if p, e := exec.LookPath(filepath.Join(dir, name)); e == nil {
				path, err = p, nil
				break
			}
		}
	}
	if err != nil {
		where := "$PATH or " + strings.Join(sbin, ", ")
		if strings.Contains(name, "/") {
			where = "that path"
		}
		SkipOutsideCI(tb, fmt.Sprintf("%s: not found in %s (%v); install it: %s", name, where, err, howToInstall))
		return ""
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return path
}
