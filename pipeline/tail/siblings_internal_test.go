package tail

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestSiblingNamesAndOrder(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	write := func(name, content string, age time.Duration) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	write("access.log", "live\n", 0)
	write("access.log.1", "one\n", time.Hour)
	write("access.log.10", "ten\n", 10*time.Hour) // numbers, not strings: 10 is older than 9
	write("access.log.9", "nine\n", 9*time.Hour)
	write("access.log-20261120", "d20\n", 0) // dates order by name, whatever the mtime
	write("access.log-20261121", "d21\n", 50*time.Hour)
	write("access.log.old", "old\n", 30*time.Hour) // no number: by mtime
	write("access.log.3.bz2", "bz2\n", 3*time.Hour)
	write("access.logger", "other file\n", 0)
	write("access.log.ssl", "another input\n", 0)
	write("access.log.ssl.1", "another input's rotation\n", 0)
	write("access.log.live-copy", "live\n", 0) // a copy of the live file
	write("error.log.1", "other log\n", 0)

	r := &rotatedFiles{
		env: &fileEnv{cfg: Config{Inputs: []Input{
			{Path: filepath.Join(dir, "access.log")}, {Path: filepath.Join(dir, "access.log.ssl")},
		}}},
		in:     Input{Path: filepath.Join(dir, "access.log")},
		logger: slog.New(slog.DiscardHandler),
	}
	sibs, err := r.list()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sibs {
		got = append(got, filepath.Base(s.path))
	}
	// Dated and numbered names are each in their own order; between the
	// two schemes, and for access.log.old, mtime decides.
	for _, pair := range [][2]string{
		{"access.log.10", "access.log.9"}, {"access.log.9", "access.log.1"},
		{"access.log-20261120", "access.log-20261121"}, {"access.log.old", "access.log.9"},
	} {
		if i, j := slices.Index(got, pair[0]), slices.Index(got, pair[1]); i < 0 || j < 0 || i > j {
			t.Errorf("%s should come before %s: %v", pair[0], pair[1], got)
		}
	}
	slices.Sort(got)
	want := []string{"access.log-20261120", "access.log-20261121", "access.log.1", "access.log.10", "access.log.9", "access.log.old"}
	if !slices.Equal(got, want) {
		t.Fatalf("siblings %v, want %v", got, want)
	}
}

func TestParseOrder(t *testing.T) {
	for suffix, want := range map[string]rotationOrder{
		"1":                   {numbered: true, num: 1},
		"12":                  {numbered: true, num: 12},
		"20261122":            {date: "20261122"},
		"2026-11-22":          {date: "20261122"},
		"20261122-1700000000": {date: "202611221700000000"},
		"old":                 {},
		"1.tmp":               {},
	} {
		if got := parseOrder(suffix); got != want {
			t.Errorf("parseOrder(%q) = %+v, want %+v", suffix, got, want)
		}
	}
}
