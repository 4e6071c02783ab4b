// Package modroot finds the repository's root, the directory holding
// go.mod, for tests and tools that read files kept in it (binaries to
// build, schema, deploy files) or beside it (../shared/data).
package modroot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Dir walks up from the working directory, which go test sets to the
// package under test, to the directory holding go.mod.
func Dir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("find module root: %w", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find module root: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Must is Dir for a test: it fails the test when there is no root.
func Must(tb testing.TB) string {
	tb.Helper()
	dir, err := Dir()
	if err != nil {
		tb.Fatal(err)
	}
	return dir
}
