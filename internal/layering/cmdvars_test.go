package layering

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cmdVarAllowed is the one package-level variable a command may declare:
// its daemon.Program. Flags are bound to values each command makes for
// itself, so cmd holds no other state of its package's.
const cmdVarAllowed = "program"

// packageVars are the names of the package-level variables declared in
// src other than cmdVarAllowed.
func packageVars(fset *token.FileSet, name string, src any) ([]string, error) {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			for _, n := range s.(*ast.ValueSpec).Names {
				if n.Name != cmdVarAllowed {
					out = append(out, n.Name+" at "+fset.Position(n.Pos()).String())
				}
			}
		}
	}
	return out, nil
}

// TestCommandsHoldNoPackageVariables keeps cmd/* wiring only: a flag, a
// cache or a counter in a package variable would be state shared by
// every run of the program (and every test of it).
func TestCommandsHoldNoPackageVariables(t *testing.T) {
	n := 0
	for _, p := range goFiles(t, module+"cmd/...") {
		n++
		fset := token.NewFileSet()
		for _, name := range p.GoFiles {
			vars, err := packageVars(fset, filepath.Join(p.Dir, name), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vars {
				t.Errorf("%s declares the package variable %s: a command holds only its %s; bind flags to a value its Command makes (see cmd/ingest's tailFlags)", p.ImportPath, v, cmdVarAllowed)
			}
		}
	}
	if n < 4 {
		t.Fatalf("go list found %d commands: is the test run from inside the module?", n)
	}
}

// TestPackageVarsCatchesAVariable guards the check itself.
func TestPackageVarsCatchesAVariable(t *testing.T) {
	src := `package main

const limit = 3

var program = 1

var (
	once  bool
	a, b  = 1, 2
)

func main() { var local int; _ = local }
`
	vars, err := packageVars(token.NewFileSet(), "main.go", src)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range vars {
		names = append(names, strings.Fields(v)[0])
	}
	if got := strings.Join(names, " "); got != "once a b" {
		t.Errorf("package variables found: %q, want %q", got, "once a b")
	}
}

// listedFiles is a package and its non-test Go files, as go list gives them.
type listedFiles struct {
	ImportPath, Dir string
	GoFiles         []string
}

// goFiles lists the packages matching pattern with their non-test files.
func goFiles(t *testing.T, pattern string) []listedFiles {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Dir,GoFiles", pattern).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var all []listedFiles
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedFiles
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		all = append(all, p)
	}
	return all
}
