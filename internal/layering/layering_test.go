// Package layering holds the test that keeps the dependencies pointing one
// way, so the picture in docs/layout.md cannot go stale:
//
//	cmd ──> config, internal/daemon ──> pipeline, sinks
//	sinks ──> pipeline (the stages' ports), console/records, domain
//	pipeline ──> broker, domain
//	broker ──> domain
//	domain ──> nothing of ours
//
// Only what a package's own (non-test) files import is checked: a test may
// wire a real adapter into the stage it tests, as cmd does.
//
// It also holds the test that cmd/* only wires: a command declares no
// package variable but its program (cmdvars_test.go).
package layering

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/pagewatch/pagewatch/"

// layer is a group of packages by path prefix, and the groups its
// packages may import. A package may always import its own group.
type layer struct {
	name   string
	prefix []string
	may    []string // other layers' names
}

// layers are tried in order: the first whose prefix matches a package is
// its layer, so narrower prefixes come first.
var layers = []layer{
	{name: "test support", prefix: []string{"internal/testserver/", "internal/testenv", "internal/e2e", "internal/freeport", "internal/modroot", "internal/procstat", "internal/realdata", "internal/sqlcheck", "internal/metricsdoc", "internal/promql", "internal/syncbuf", "internal/testcheck", "internal/layering", "internal/nabeval", "internal/syntheval", "internal/demotraffic"},
		may: []string{"domain", "broker", "pipeline", "console", "console records", "sinks", "config", "daemon", "schema", "leaf"}},
	{name: "leaf", prefix: []string{"config/secret", "config/tlsconfig", "config/strict", "internal/progress", "internal/admin", "internal/democlock", "schema"},
		may: []string{}},
	{name: "domain", prefix: []string{"domain/"}, may: []string{}},
	{name: "broker", prefix: []string{"broker/"}, may: []string{"domain", "leaf"}},
	{name: "pipeline", prefix: []string{"pipeline/"}, may: []string{"domain", "broker", "leaf"}},
	// The console owns its ports, like a stage: sinks implement them,
	// with the rows of console/records, not importing the console (whose
	// imports, the sweep's among them, would then be every sink's).
	{name: "console records", prefix: []string{"console/records"}, may: []string{"domain"}},
	{name: "console", prefix: []string{"console"}, may: []string{"console records", "pipeline", "domain", "broker", "leaf"}},
	{name: "sinks", prefix: []string{"sinks/"}, may: []string{"console records", "pipeline", "domain", "broker", "leaf"}},
	{name: "config", prefix: []string{"config"}, may: []string{"console", "console records", "pipeline", "sinks", "domain", "broker", "leaf"}},
	{name: "daemon", prefix: []string{"internal/daemon"}, may: []string{"config", "pipeline", "sinks", "domain", "broker", "leaf"}},
	{name: "deploy", prefix: []string{"deploy"}, may: []string{"config", "leaf"}},
	{name: "cmd", prefix: []string{"cmd/"}, may: []string{"daemon", "config", "console", "console records", "pipeline", "sinks", "domain", "broker", "leaf"}},
}

// sameGroupForbidden are layers whose packages must not import each
// other: one sink does not reach into another.
var sameGroupForbidden = map[string]bool{"sinks": true, "cmd": true}

func layerOf(pkg string) (layer, bool) {
	rel := strings.TrimPrefix(pkg, module)
	for _, l := range layers {
		for _, p := range l.prefix {
			if rel == strings.TrimSuffix(p, "/") || strings.HasPrefix(rel, p) ||
				(!strings.HasSuffix(p, "/") && strings.HasPrefix(rel, p+"/")) {
				return l, true
			}
		}
	}
	return layer{}, false
}

type listed struct {
	ImportPath string
	Imports    []string
}

func packages(t *testing.T) []listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"...")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listed
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages: is the test run from inside the module?", len(pkgs))
	}
	return pkgs
}

func TestDependenciesPointOneWay(t *testing.T) {
	for _, p := range packages(t) {
		from, ok := layerOf(p.ImportPath)
		if !ok {
			t.Errorf("%s belongs to no layer: add it to the layers in internal/layering and to docs/layout.md", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			to, ok := layerOf(imp)
			if !ok {
				continue // reported as a package of its own
			}
			if to.name == from.name {
				if sameGroupForbidden[from.name] {
					t.Errorf("%s imports %s: one %s package must not depend on another", p.ImportPath, imp, from.name)
				}
				continue
			}
			if !contains(from.may, to.name) {
				t.Errorf("%s (%s) imports %s (%s): %s may import only %v", p.ImportPath, from.name, imp, to.name, from.name, from.may)
			}
		}
	}
}

// TestLayersCatchAViolation guards the test itself: a checker that accepts
// everything would pass forever.
func TestLayersCatchAViolation(t *testing.T) {
	pipe, _ := layerOf(module + "pipeline/sweep")
	sink, _ := layerOf(module + "sinks/clickhouse")
	dom, _ := layerOf(module + "domain/hit")
	if contains(pipe.may, sink.name) {
		t.Error("pipeline may import sinks")
	}
	if len(dom.may) != 0 {
		t.Error("domain may import something of ours")
	}
	if l, _ := layerOf(module + "internal/testserver/natstest"); l.name != "test support" {
		t.Errorf("natstest is in layer %q", l.name)
	}
	for _, l := range layers {
		if contains(l.may, "test support") || contains(l.may, "cmd") {
			t.Errorf("layer %s may import %v: test support and cmd are imported by nothing", l.name, l.may)
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
