package grafana_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// literalLabelValues finds the label values the Go source passes as string
// literals to WithLabelValues, by metric name, then label name, then value
// (the first place it is set). A metric is found through the field or
// variable it is stored in, within its package; a name two metrics of one
// package share is skipped.
func literalLabelValues(t *testing.T, code map[string]codeMetric) map[string]map[string]map[string]string {
	t.Helper()
	held := map[string][]codeMetric{} // dir + " " + holder
	for _, c := range code {
		if c.Holder != "" {
			held[c.Dir+" "+c.Holder] = append(held[c.Dir+" "+c.Holder], c)
		}
	}
	out := map[string]map[string]map[string]string{}
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "../.." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel("../..", filepath.Dir(path))
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "WithLabelValues" {
				return true
			}
			ms := held[filepath.ToSlash(dir)+" "+lastName(sel.X)]
			if len(ms) != 1 {
				return true
			}
			m := ms[0]
			for i, arg := range call.Args {
				v, ok := stringLit(arg)
				if !ok || i >= len(m.Labels) {
					continue
				}
				if out[m.Name] == nil {
					out[m.Name] = map[string]map[string]string{}
				}
				if out[m.Name][m.Labels[i]] == nil {
					out[m.Name][m.Labels[i]] = map[string]string{}
				}
				if _, seen := out[m.Name][m.Labels[i]][v]; !seen {
					out[m.Name][m.Labels[i]][v] = fset.Position(arg.Pos()).String()
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMetricsDocLabelValues: each label value the code sets as a literal
// (WithLabelValues("rejected")) is named in its metric's meaning in
// deploy/metrics.md, so a value added in the code is documented too.
func TestMetricsDocLabelValues(t *testing.T) {
	uses := literalLabelValues(t, codeMetrics(t))
	checked := 0
	for _, m := range readMetricsDoc(t) {
		for label, vals := range uses[m.Name] {
			for v, pos := range vals {
				checked++
				if !regexp.MustCompile(`\b` + regexp.QuoteMeta(v) + `\b`).MatchString(m.Meaning) {
					t.Errorf("deploy/metrics.md:%d: %s (%s): the code sets %s=%q (%s), which the meaning does not name", m.Line, m.Name, m.Daemon, label, v, pos)
				}
			}
		}
	}
	// reloads (ok, rejected, failed), tail lines and rotations, discover
	// errors, rate-limit results, sweeper rule reloads: 20 values at least.
	if checked < 20 {
		t.Fatalf("checked only %d literal label values; the scan is broken", checked)
	}
	t.Logf("%d literal label values named in deploy/metrics.md", checked)
}
