// Package sqlcheck proves SQL statements on the current ClickHouse engine from
// tests. pagewatch's SQL must also run on ClickHouse 18.16, which is checked
// elsewhere against a real server; here the current engine is chDB (the npm
// package "chdb", ClickHouse 26.x embedded in Node.js), so no server is needed.
//
// All statements of one call run in order in one fresh chDB session, in a
// single node process, because loading chDB dominates the cost.
//
// Session behaviour (chdb 3.4.0, engine 26.7): the session keeps state between
// statements, so USE db and SET persist, and unqualified names resolve in the
// "default" database until a USE. One statement may hold several queries
// separated by ";"; chDB runs all of them and returns their outputs
// concatenated, so sqlcheck cannot tell one query from two.
package sqlcheck

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/modroot"
	"github.com/pagewatch/pagewatch/internal/testcheck"
)

// Statement is one SQL statement to prove on the current engine.
type Statement struct {
	Name string // where it comes from, e.g. "schema 0001_init.sql #3" or "clickhouse.insertHits"
	SQL  string // complete SQL, no placeholders
}

// Result is the outcome of one Statement.
type Result struct {
	Name   string
	Output string // the engine's output in CSV format; empty for most non-SELECT statements
	Err    string // the engine's error, empty if the statement succeeded
}

// ModulesEnv names the environment variable that overrides where chdb is
// looked for: a node_modules directory containing chdb.
const ModulesEnv = "PAGEWATCH_CHDB_MODULES"

// timeout bounds one node process, so a hung engine fails the test with a
// message instead of running into go test's global timeout.
const timeout = 5 * time.Minute

//go:embed run.js
var runJS []byte

// Run executes stmts in order in a fresh chDB session and calls t.Errorf for
// each one that fails, with the statement's Name, its SQL and the engine's
// error. It returns the engine version string.
func Run(t testing.TB, stmts []Statement) string {
	t.Helper()
	version, _ := run(t, stmts)
	return version
}

// Query is Run for callers that also want to check outputs: it reports
// failures the same way and returns one Result per statement, in order.
func Query(t testing.TB, stmts []Statement) []Result {
	t.Helper()
	_, results := run(t, stmts)
	return results
}

// nodeResult is one entry of run.js's result file.
type nodeResult struct {
	OK     bool   `json:"ok"`
	Output string `json:"output"`
	Error  string `json:"error"`
}

func run(t testing.TB, stmts []Statement) (string, []Result) {
	t.Helper()
	node, modules := locate(t)

	dir := t.TempDir()
	script := filepath.Join(dir, "run.js")
	if err := os.WriteFile(script, runJS, 0o644); err != nil {
		t.Fatalf("sqlcheck: write node script: %v", err)
	}
	resultFile := filepath.Join(dir, "results.json")

	sqls := make([]string, len(stmts))
	for i, s := range stmts {
		sqls[i] = s.SQL
	}
	input, err := json.Marshal(sqls)
	if err != nil {
		t.Fatalf("sqlcheck: encode statements: %v", err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, filepath.Join(dir, "data"), resultFile)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	cmd.Stdin = bytes.NewReader(input)
	var out bytes.Buffer // stdout and stderr, only to explain a crash
	cmd.Stdout = &out
	cmd.Stderr = &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("sqlcheck: node %s (NODE_PATH=%s) after %v: %v\n%s", script, modules, time.Since(start).Round(time.Millisecond), err, out.Bytes())
	}
	t.Logf("sqlcheck: %d statements on chDB in %v", len(stmts), time.Since(start).Round(time.Millisecond))

	raw, err := os.ReadFile(resultFile)
	if err != nil {
		t.Fatalf("sqlcheck: read node results: %v\nnode output:\n%s", err, out.Bytes())
	}
	var got struct {
		Version string       `json:"version"`
		Results []nodeResult `json:"results"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("sqlcheck: decode node results: %v", err)
	}
	if len(got.Results) != len(stmts) {
		t.Fatalf("sqlcheck: node returned %d results for %d statements", len(got.Results), len(stmts))
	}

	results := make([]Result, len(stmts))
	for i, r := range got.Results {
		results[i] = Result{Name: stmts[i].Name, Output: r.Output, Err: r.Error}
		if !r.OK {
			t.Errorf("sqlcheck: %s fails on ClickHouse %s:\n%s\nerror: %s", stmts[i].Name, got.Version, stmts[i].SQL, r.Error)
		}
	}
	return got.Version, results
}

// locate finds node and the node_modules directory holding chdb. If either is
// missing it fails the test in CI and skips it elsewhere, so a machine without
// chDB never passes silently.
func locate(t testing.TB) (node, modules string) {
	t.Helper()
	node, modules, err := find()
	if err == nil {
		return node, modules
	}
	testcheck.SkipOutsideCI(t, fmt.Sprintf("sqlcheck: %v; from the repo root run `npm install --prefix .cache/chdb chdb`, or set %s to a node_modules directory containing chdb", err, ModulesEnv))
	return "", ""
}

func find() (node, modules string, err error) {
	node, err = exec.LookPath("node")
	if err != nil {
		return "", "", fmt.Errorf("node not found: %w", err)
	}
	modules = os.Getenv(ModulesEnv)
	if modules == "" {
		root, err := modroot.Dir()
		if err != nil {
			return "", "", err
		}
		modules = filepath.Join(root, ".cache", "chdb", "node_modules")
	}
	// NODE_PATH entries are resolved against node's working directory, which
	// is the test's package directory; make the path independent of that.
	if modules, err = filepath.Abs(modules); err != nil {
		return "", "", fmt.Errorf("resolve chdb modules dir: %w", err)
	}
	if _, err := os.Stat(filepath.Join(modules, "chdb", "package.json")); err != nil {
		return "", "", fmt.Errorf("chdb not installed in %s: %w", modules, err)
	}
	return node, modules, nil
}
