package promql

import (
	"os"
	"testing"

	"github.com/pagewatch/pagewatch/internal/testcheck"
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
	return testcheck.RequireTool(t, name, "apt-get install --no-install-recommends prometheus (Debian; it ships promtool), or set PAGEWATCH_PROMTOOL")
}
