package promql

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// Promtool returns the path of promtool ($PAGEWATCH_PROMTOOL, else found
// on $PATH), the validator of rule files and PromQL. Without it the test
// fails in CI and skips elsewhere, saying how to get it.
func Promtool(t testing.TB) string {
	t.Helper()
	name := os.Getenv("PAGEWATCH_PROMTOOL")
	if name == "" {
		name = "promtool"
	}
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("promtool not found (%v): apt-get install --no-install-recommends prometheus (Debian; it ships promtool), or set PAGEWATCH_PROMTOOL", err)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg + " (skipping outside CI)")
	return ""
}
