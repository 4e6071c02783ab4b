package grafana_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/internal/metricsdoc"
)

// docMetric is one row of a table in deploy/metrics.md.
type docMetric = metricsdoc.Metric

var daemons = metricsdoc.Daemons

// readMetricsDoc parses deploy/metrics.md, failing the test on any
// malformed row.
func readMetricsDoc(t *testing.T) []docMetric {
	t.Helper()
	doc, err := metricsdoc.Read("../metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	return doc.Metrics
}

// codeMetric is a metric the Go source registers.
type codeMetric struct {
	Name, Type string // Type is "" when only a Desc names it and no const metric gives the type
	Labels     []string
	Pos        string
	Dir        string // package directory, relative to the repo root
	Holder     string // the field or variable it is assigned to, if any
}

var newFuncs = map[string]string{
	"NewCounter": "counter", "NewCounterVec": "counter",
	"NewGauge": "gauge", "NewGaugeVec": "gauge",
	"NewHistogram": "histogram", "NewHistogramVec": "histogram",
	"NewSummary": "summary", "NewSummaryVec": "summary",
}

var valueTypes = map[string]string{"CounterValue": "counter", "GaugeValue": "gauge", "UntypedValue": "untyped"}

// codeMetrics reads every non-test Go file of the module and returns the
// metrics built with prometheus.NewX(Opts{Name: ...}) or NewDesc. A Name
// of the form "prefix_" + param inside a func literal bound to a variable
// (pipeline/load/metrics.go) is resolved through that variable's calls.
func codeMetrics(t *testing.T) map[string]codeMetric {
	t.Helper()
	out := map[string]codeMetric{}
	add := func(m codeMetric) {
		if prev, ok := out[m.Name]; ok {
			t.Errorf("%s: metric %s is also built at %s", m.Pos, m.Name, prev.Pos)
		}
		out[m.Name] = m
	}
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
		scanFile(fset, f, func(m codeMetric) { m.Dir = filepath.ToSlash(dir); add(m) })
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func scanFile(fset *token.FileSet, f *ast.File, add func(codeMetric)) {
	type helper struct {
		prefix, typ string
		labels      []string
	}
	helpers := map[string]helper{} // func variable name -> what it builds
	descs := map[string]codeMetric{}
	descTypes := map[string]string{} // field or variable holding a Desc -> value type
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		fn := selectorName(call.Fun, "prometheus")
		if fn == "MustNewConstMetric" && len(call.Args) >= 2 {
			if typ, ok := valueTypes[selectorName(call.Args[1], "prometheus")]; ok {
				descTypes[lastName(call.Args[0])] = typ
			}
		}
		if fn == "NewDesc" && len(call.Args) >= 3 {
			if name, ok := stringLit(call.Args[0]); ok {
				holder := ""
				if kv, ok := stack[len(stack)-2].(*ast.KeyValueExpr); ok {
					holder = lastName(kv.Key)
				}
				descs[holder] = codeMetric{Name: name, Labels: stringList(call.Args[2]), Pos: fset.Position(call.Pos()).String()}
			}
		}
		typ, ok := newFuncs[fn]
		if !ok || len(call.Args) == 0 {
			return true
		}
		var labels []string
		if len(call.Args) >= 2 {
			labels = stringList(call.Args[1])
		}
		nameExpr := optsName(call.Args[0])
		if name, ok := stringLit(nameExpr); ok {
			add(codeMetric{Name: name, Type: typ, Labels: labels, Pos: fset.Position(call.Pos()).String(), Holder: holderOf(stack)})
			return true
		}
		// "prefix" + param in a func literal bound to a variable.
		if be, ok := nameExpr.(*ast.BinaryExpr); ok && be.Op == token.ADD {
			prefix, ok := stringLit(be.X)
			if !ok {
				return true
			}
			for i := len(stack) - 1; i >= 1; i-- {
				if _, ok := stack[i].(*ast.FuncLit); !ok {
					continue
				}
				if as, ok := stack[i-1].(*ast.AssignStmt); ok && len(as.Lhs) == 1 {
					helpers[lastName(as.Lhs[0])] = helper{prefix, typ, labels}
				}
				break
			}
		}
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		id, ok := call.Fun.(*ast.Ident)
		if !ok {
			return true
		}
		if h, ok := helpers[id.Name]; ok {
			if s, ok := stringLit(call.Args[0]); ok {
				add(codeMetric{Name: h.prefix + s, Type: h.typ, Labels: h.labels, Pos: fset.Position(call.Pos()).String()})
			}
		}
		return true
	})
	for holder, m := range descs {
		m.Type = descTypes[holder]
		add(m)
	}
}

// holderOf names what the innermost node of stack is stored in: a field
// of a composite literal, or the left side of an assignment.
func holderOf(stack []ast.Node) string {
	if len(stack) < 2 {
		return ""
	}
	call := stack[len(stack)-1]
	switch p := stack[len(stack)-2].(type) {
	case *ast.KeyValueExpr:
		return lastName(p.Key)
	case *ast.AssignStmt:
		for i, r := range p.Rhs {
			if r == call && i < len(p.Lhs) {
				return lastName(p.Lhs[i])
			}
		}
	}
	return ""
}

// selectorName returns Sel of pkg.Sel, or "".
func selectorName(e ast.Expr, pkg string) string {
	if s, ok := e.(*ast.SelectorExpr); ok {
		if id, ok := s.X.(*ast.Ident); ok && id.Name == pkg {
			return s.Sel.Name
		}
	}
	return ""
}

// lastName is x of x, a.x or a.b.x.
func lastName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

func stringLit(e ast.Expr) (string, bool) {
	if bl, ok := e.(*ast.BasicLit); ok && bl.Kind == token.STRING {
		s, err := strconv.Unquote(bl.Value)
		return s, err == nil
	}
	return "", false
}

// optsName is the Name field of a prometheus.XOpts composite literal.
func optsName(e ast.Expr) ast.Expr {
	cl, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	for _, el := range cl.Elts {
		if kv, ok := el.(*ast.KeyValueExpr); ok && lastName(kv.Key) == "Name" {
			return kv.Value
		}
	}
	return nil
}

func stringList(e ast.Expr) []string {
	cl, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	var out []string
	for _, el := range cl.Elts {
		if s, ok := stringLit(el); ok {
			out = append(out, s)
		}
	}
	return out
}

// servedBy maps each package that builds metrics to the daemons whose
// registry it is given (cmd/ingest, cmd/sweeper, cmd/worker).
var servedBy = map[string][]string{
	"internal/daemon":    metricsdoc.Headings,
	"console":            {"console"},
	"pipeline/tail":      {"ingest tail"},
	"pipeline/visitor":   {"ingest tail"},
	"pipeline/discover":  {"ingest tail"},
	"pipeline/syslog":    {"ingest tail"},
	"pipeline/load":      {"ingest load"},
	"pipeline/retention": {"ingest load"},
	"pipeline/sweep":     {"sweeper"},
	"pipeline/notify":    {"worker"},
	"pipeline/report":    {"worker"},
	"broker/ratelimit":   {"worker"},
}

// TestMetricsDocMatchesCode: deploy/metrics.md lists exactly the metrics
// the code builds, each with the code's type and label names.
func TestMetricsDocMatchesCode(t *testing.T) {
	doc := readMetricsDoc(t)
	code := codeMetrics(t)
	if len(code) < 40 {
		t.Fatalf("found only %d metrics in the Go source; the scan is broken", len(code))
	}
	documented := map[string]bool{}
	for _, m := range doc {
		documented[m.Name] = true
		c, ok := code[m.Name]
		if !ok {
			t.Errorf("deploy/metrics.md:%d: %s (%s) is built nowhere in the Go source", m.Line, m.Name, m.Daemon)
			continue
		}
		if !slices.Contains([]string{"counter", "gauge", "histogram"}, m.Type) {
			t.Errorf("deploy/metrics.md:%d: %s: type %q is not counter, gauge or histogram", m.Line, m.Name, m.Type)
		}
		if c.Type != "" && c.Type != m.Type {
			t.Errorf("deploy/metrics.md:%d: %s is a %s in the doc, a %s at %s", m.Line, m.Name, m.Type, c.Type, c.Pos)
		}
		if c.Type == "" {
			t.Errorf("%s: %s: no const metric gives its type; teach this test how it is collected", c.Pos, m.Name)
		}
		if !slices.Equal(sorted(m.Labels), sorted(c.Labels)) {
			t.Errorf("deploy/metrics.md:%d: %s has labels %q in the doc, %q at %s", m.Line, m.Name, m.Labels, c.Labels, c.Pos)
		}
		if m.Type == "counter" != strings.HasSuffix(m.Name, "_total") {
			t.Errorf("deploy/metrics.md:%d: %s: counters, and only counters, end in _total", m.Line, m.Name)
		}
	}
	var missing []string
	for name, c := range code {
		if !documented[name] {
			missing = append(missing, name+" ("+c.Pos+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("metric %s is not in deploy/metrics.md", m)
	}
	// Each metric is listed under the daemons that serve it, once each.
	listed := map[string][]string{}
	for _, m := range doc {
		listed[m.Name] = append(listed[m.Name], m.Daemon)
	}
	for name, c := range code {
		want, ok := servedBy[c.Dir]
		if !ok {
			t.Errorf("%s: package %s builds %s but servedBy does not say which daemons serve it", c.Pos, c.Dir, name)
			continue
		}
		if documented[name] && !slices.Equal(sorted(listed[name]), sorted(want)) {
			t.Errorf("deploy/metrics.md lists %s under %q; %s is served by %q", name, listed[name], c.Dir, want)
		}
	}
	// Each daemon lists a metric once.
	seen := map[string]int{}
	for _, m := range doc {
		key := m.Daemon + " " + m.Name
		if prev, ok := seen[key]; ok {
			t.Errorf("deploy/metrics.md:%d: %s listed twice under %s (line %d)", m.Line, m.Name, m.Daemon, prev)
		}
		seen[key] = m.Line
	}
	for _, d := range daemons {
		if !slices.ContainsFunc(doc, func(m docMetric) bool { return m.Daemon == d }) {
			t.Errorf("deploy/metrics.md: no table for %s", d)
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}
