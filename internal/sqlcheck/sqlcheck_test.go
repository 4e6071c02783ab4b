package sqlcheck

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// collectTB records Errorf calls instead of failing, so a test can assert
// that a bad statement is reported. Everything else (Fatalf, Skipf, TempDir,
// Context, ...) goes to the real test.
type collectTB struct {
	testing.TB
	errors []string
}

func (c *collectTB) Errorf(format string, args ...any) {
	c.errors = append(c.errors, fmt.Sprintf(format, args...))
}

var good = []Statement{
	{"create", "CREATE TABLE t (a UInt32, d Date) ENGINE = ReplacingMergeTree() PARTITION BY toYYYYMM(d) ORDER BY (a)"},
	{"insert", "INSERT INTO t (a, d) VALUES (1, '2026-01-01')"},
	{"count", "SELECT count() FROM t"},
}

func TestRunGood(t *testing.T) {
	version := Run(t, good)
	if version == "" {
		t.Error("Run returned an empty engine version")
	}
	t.Logf("engine version %s", version)
}

func TestQueryReportsFailures(t *testing.T) {
	stmts := slices.Concat(good, []Statement{
		// The pre-1.x MergeTree syntax ClickHouse 18.16 still accepted; the
		// current engine must reject it, which proves errors surface.
		{"old mergetree", "CREATE TABLE old (a UInt32, d Date) ENGINE = MergeTree(d, (a), 8192)"},
		{"blank", "  "},
		// Statements after a failure still run, in the same session: USE
		// sticks, so later names resolve in the new database.
		{"create db", "CREATE DATABASE other"},
		{"use", "USE other"},
		{"current db", "SELECT currentDatabase()"},
	})
	c := &collectTB{TB: t}
	results := Query(c, stmts)

	if len(results) != len(stmts) {
		t.Fatalf("got %d results for %d statements", len(results), len(stmts))
	}
	if got := results[2].Output; got != "1\n" {
		t.Errorf("count output = %q, want %q", got, "1\n")
	}
	if got := results[len(results)-1].Output; got != "\"other\"\n" {
		t.Errorf("currentDatabase() after USE = %q, want %q", got, "\"other\"\n")
	}
	for i, r := range results {
		if r.Name != stmts[i].Name {
			t.Errorf("result %d named %q, want %q", i, r.Name, stmts[i].Name)
		}
		bad := r.Name == "old mergetree" || r.Name == "blank"
		if bad != (r.Err != "") {
			t.Errorf("%s: Err = %q, want error: %v", r.Name, r.Err, bad)
		}
	}

	if len(c.errors) != 2 {
		t.Fatalf("got %d reported errors, want 2:\n%s", len(c.errors), strings.Join(c.errors, "\n"))
	}
	// The report must name the statement, show its SQL and the engine's error.
	for _, want := range []string{"old mergetree", "MergeTree(d, (a), 8192)", "BAD_ARGUMENTS"} {
		if !strings.Contains(c.errors[0], want) {
			t.Errorf("report lacks %q:\n%s", want, c.errors[0])
		}
	}
	if !strings.Contains(c.errors[1], "blank") || !strings.Contains(c.errors[1], "empty statement") {
		t.Errorf("blank statement report = %q", c.errors[1])
	}
}
