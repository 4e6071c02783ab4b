// Package realdata finds the real access logs kept beside the repository in
// ../shared/data/, for tests and benchmarks. They are read in place, never
// copied into the repository.
package realdata

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/pagewatch/pagewatch/internal/modroot"
	"github.com/pagewatch/pagewatch/internal/testcheck"
)

// ApacheLog is 10,000 lines of a real Apache combined-format log.
const ApacheLog = "apache_logs_semicomplete_2015.log"

// Path returns the path of a shared data file. A missing file fails the
// test under CI and skips it elsewhere, saying so.
func Path(tb testing.TB, name string) string {
	tb.Helper()
	path := filepath.Join(modroot.Must(tb), "..", "shared", "data", name)
	if _, err := os.Stat(path); err != nil {
		testcheck.SkipOutsideCI(tb, fmt.Sprintf("realdata: shared data file is missing (expected beside the repo in ../shared/data/): %v", err))
	}
	return path
}

// Lines returns the file's lines without their newlines.
func Lines(tb testing.TB, name string) [][]byte {
	tb.Helper()
	data, err := os.ReadFile(Path(tb, name))
	if err != nil {
		tb.Fatal(err)
	}
	lines := bytes.Split(data, []byte("\n"))
	if n := len(lines); n > 0 && len(lines[n-1]) == 0 {
		lines = lines[:n-1]
	}
	return lines
}
