package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// maxMethods is the most methods one type declares: past it a type is
// doing several jobs, and its parts want types of their own (as the
// worker's claims, limits, hand-offs and digests have).
const maxMethods = 25

// methodCounts counts the methods each named type declares in one file.
func methodCounts(fset *token.FileSet, name string, src any, into map[string]int) error {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv == nil || len(fd.Recv.List) == 0 {
			continue
		}
		t := fd.Recv.List[0].Type
		if s, ok := t.(*ast.StarExpr); ok {
			t = s.X
		}
		switch g := t.(type) {
		case *ast.IndexExpr:
			t = g.X
		case *ast.IndexListExpr:
			t = g.X
		}
		if id, ok := t.(*ast.Ident); ok {
			into[id.Name]++
		}
	}
	return nil
}

// TestNoTypeHasTooManyMethods keeps every type of ours (non-test files)
// at maxMethods or fewer.
func TestNoTypeHasTooManyMethods(t *testing.T) {
	pkgs := 0
	for _, p := range goFiles(t, module+"...") {
		pkgs++
		counts := map[string]int{}
		fset := token.NewFileSet()
		for _, name := range p.GoFiles {
			if err := methodCounts(fset, filepath.Join(p.Dir, name), nil, counts); err != nil {
				t.Fatal(err)
			}
		}
		for typ, n := range counts {
			if n > maxMethods {
				t.Errorf("%s.%s declares %d methods, more than %d: give its parts types of their own", p.ImportPath, typ, n, maxMethods)
			}
		}
	}
	if pkgs < 20 {
		t.Fatalf("go list found %d packages: is the test run from inside the module?", pkgs)
	}
}

// TestMethodCountsCountsReceivers guards the count itself.
func TestMethodCountsCountsReceivers(t *testing.T) {
	src := `package p

type T struct{}
type G[K any] struct{}

func (T) a()     {}
func (*T) b()    {}
func (g *G[K]) c() {}
func f()         {}
`
	counts := map[string]int{}
	if err := methodCounts(token.NewFileSet(), "p.go", src, counts); err != nil {
		t.Fatal(err)
	}
	if counts["T"] != 2 || counts["G"] != 1 || len(counts) != 2 {
		t.Errorf("counts %v, want T 2, G 1", counts)
	}
}
