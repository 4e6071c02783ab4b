package modroot_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pagewatch/pagewatch/internal/modroot"
)

func TestFindsGoModAboveThePackage(t *testing.T) {
	root := modroot.Must(t)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "modroot", "modroot.go")); err != nil {
		t.Errorf("%s is not this repository's root: %v", root, err)
	}
}

func TestNoGoModIsAnError(t *testing.T) {
	t.Chdir(t.TempDir())
	if dir, err := modroot.Dir(); err == nil {
		t.Errorf("found %s in a temp dir", dir)
	}
}
