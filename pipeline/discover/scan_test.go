package discover_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/pipeline/discover"
)

// tree is a log directory with live logs, rotated siblings, sites and a
// deep directory.
var tree = []string{
	"access.log", "error.log", "other.txt", "v1.log", "v2.log", "v10.log",
	"access.log.1", "access.log.2.gz", "access.log.12", "access.log-20261122", "access.log-2026112206",
	"access.log-2026-11-22", "b.log.bz2", "c.log.xz", "d.log.zst",
	"sites/a/logs/access.log", "sites/a/logs/error.log", "sites/a/logs/access.log.1",
	"sites/b/logs/access.log", "sites/b/htdocs/index.html", "sites/b/logs/old/access.log",
	"deep/x/y/z/app.log",
}

func TestScanGlobs(t *testing.T) {
	root := t.TempDir()
	touch(t, root, tree...)
	for _, tc := range []struct {
		paths, exclude []string
		want           []string
	}{
		{paths: []string{"R/*.log"}, want: []string{"access.log", "error.log", "v1.log", "v10.log", "v2.log"}},
		{paths: []string{"R/v?.log"}, want: []string{"v1.log", "v2.log"}},
		{paths: []string{"R/v[0-9].log"}, want: []string{"v1.log", "v2.log"}},
		{paths: []string{"R/v[^1].log"}, want: []string{"v2.log"}},
		{paths: []string{"R/access.log"}, want: []string{"access.log"}},
		{paths: []string{"R/nope/*.log", "R/nope.log"}, want: []string{}},
		{paths: []string{"R/sites/*/logs/access.log"}, want: []string{"sites/a/logs/access.log", "sites/b/logs/access.log"}},
		// "**" matches no directory too.
		{paths: []string{"R/**/access.log"}, want: []string{"access.log", "sites/a/logs/access.log", "sites/b/logs/access.log", "sites/b/logs/old/access.log"}},
		{paths: []string{"R/deep/**/app.log"}, want: []string{"deep/x/y/z/app.log"}},
		{paths: []string{"R/deep/x/**/y/z/**/app.log"}, want: []string{"deep/x/y/z/app.log"}},
		{paths: []string{"R/**/logs/*.log"}, want: []string{"sites/a/logs/access.log", "sites/a/logs/error.log", "sites/b/logs/access.log"}},
		{paths: []string{"R/sites/**"}, want: []string{"sites/a/logs/access.log", "sites/a/logs/error.log", "sites/b/htdocs/index.html", "sites/b/logs/access.log", "sites/b/logs/old/access.log"}},
		// Overlapping globs and nested roots: each file once.
		{paths: []string{"R/**/*.log", "R/sites/a/logs/*.log", "R/*.log"}, want: []string{
			"access.log", "deep/x/y/z/app.log", "error.log", "sites/a/logs/access.log", "sites/a/logs/error.log",
			"sites/b/logs/access.log", "sites/b/logs/old/access.log", "v1.log", "v10.log", "v2.log"}},
		// A base-name exclude applies at every depth.
		{paths: []string{"R/**/*.log"}, exclude: []string{"error.log", "v*.log"}, want: []string{
			"access.log", "deep/x/y/z/app.log", "sites/a/logs/access.log", "sites/b/logs/access.log", "sites/b/logs/old/access.log"}},
		// Whole-path excludes, a subtree and a directory name anywhere.
		{paths: []string{"R/**/access.log"}, exclude: []string{"R/sites/a/**", "**/old/**"}, want: []string{"access.log", "sites/b/logs/access.log"}},
		{paths: []string{"R/*"}, exclude: []string{"R/v1*"}, want: []string{"access.log", "error.log", "other.txt", "v2.log"}},
	} {
		name := strings.Join(tc.paths, ",")
		t.Run(name, func(t *testing.T) {
			cfg := discover.DefaultConfig()
			for _, p := range tc.paths {
				cfg.Paths = append(cfg.Paths, strings.Replace(p, "R", root, 1))
			}
			for _, p := range tc.exclude {
				cfg.Exclude = append(cfg.Exclude, strings.Replace(p, "R/", root+"/", 1))
			}
			w, _ := newWatcher(t, cfg)
			got, err := w.Scan()
			if err != nil {
				t.Fatal(err)
			}
			if g := rel(t, root, got); !slices.Equal(g, tc.want) {
				t.Fatalf("got  %q\nwant %q", g, tc.want)
			}
		})
	}
}

func TestRotatedSiblingsExcludedByDefault(t *testing.T) {
	root := t.TempDir()
	touch(t, root, tree...)
	cfg := discover.DefaultConfig()
	cfg.Paths = []string{root + "/*"}
	w, _ := newWatcher(t, cfg)
	got, err := w.Scan()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"access.log", "error.log", "other.txt", "v1.log", "v10.log", "v2.log"}
	if g := rel(t, root, got); !slices.Equal(g, want) {
		t.Fatalf("got  %q\nwant %q", g, want)
	}

	cfg.ExcludeRotated = false
	w, _ = newWatcher(t, cfg)
	if got, _ = w.Scan(); len(got) != 15 {
		t.Fatalf("without exclude_rotated: got %d files %q, want all 15", len(got), rel(t, root, got))
	}
}

func TestMatch(t *testing.T) {
	cfg := discover.DefaultConfig()
	cfg.Paths = []string{"/var/log/nginx/*.log", "/srv/**/logs/*.log", "/var/log/**/*.log"}
	cfg.Exclude = []string{"*error*"}
	w, _ := newWatcher(t, cfg)
	for path, want := range map[string]int{
		"/var/log/nginx/access.log":          0,
		"/var/log/nginx/sub/access.log":      2,
		"/var/log/access.log":                2, // "**" matches no directory
		"/srv/logs/a.log":                    1,
		"/srv/a/b/c/logs/a.log":              1,
		"/var/log/nginx/error.log":           -1, // excluded
		"/var/log/nginx/access.log.1":        -1, // rotated
		"/var/log/nginx/access.log.2.gz":     -1,
		"/var/log/nginx/access.log-20261122": -1,
		"/srv/a/logs/b/a.log":                -1,
		"/var/lib/x.log":                     -1,
	} {
		i, ok := w.Match(path)
		if !ok {
			i = -1
		}
		if i != want {
			t.Errorf("Match(%q) = %d, %v; want %d", path, i, ok, want)
		}
	}
}

func TestValidateNamesKeys(t *testing.T) {
	cfg := discover.DefaultConfig()
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "ingest.tail.inputs: ") {
		t.Fatalf("no paths: %v", err)
	}
	cfg.Paths = []string{"logs/*.log", "/a/b**/c", "/a/[x/y", "/a//b", "/a/../b", "/ok/*.log", "/ok/*.log"}
	cfg.Exclude = []string{"old/*.log", "/x/", "[", "**"}
	cfg.PollInterval = 0
	cfg.Debounce = -1
	err := cfg.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"ingest.tail.inputs[0].path: must be an absolute path",
		`ingest.tail.inputs[1].path: "**" must be a whole path segment`,
		"ingest.tail.inputs[2].path: bad pattern",
		"ingest.tail.inputs[3].path: must be a clean path",
		"ingest.tail.inputs[4].path: must be a clean path",
		`ingest.tail.inputs[6].path: "/ok/*.log" listed twice`,
		"ingest.tail.discover.exclude[0]: with a /, must be absolute or start with **/",
		"ingest.tail.discover.exclude[1]: must not end in /",
		"ingest.tail.discover.exclude[2]: bad pattern",
		"ingest.tail.discover.exclude[3]: ",
		"ingest.tail.discover.poll_interval: must be positive",
		"ingest.tail.discover.debounce: must be 0s..10s",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "inputs[5]") {
		t.Errorf("a good path was refused:\n%v", err)
	}
	if err := discover.DefaultConfig().Validate(); err == nil {
		t.Error("defaults without paths validate")
	}
}

func TestSymlinks(t *testing.T) {
	root := t.TempDir()
	touch(t, root, "real/access.log", "releases/r42/logs/access.log", "tree/a/app.log")
	links := map[string]string{
		"link.log":      "real/access.log",  // a symlink to a file is followed
		"dangling.log":  "real/missing.log", // and one to nothing ignored
		"dir.log":       "real",             // a symlink to a directory is no file
		"sites/current": "../releases/r42",  // named by a glob segment: followed
		"tree/a/loop":   "..",               // under "**": not descended
		"tree/up":       "../tree",          // nor this
	}
	for name, target := range links {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"R/*.log", []string{"link.log"}},
		{"R/sites/*/logs/*.log", []string{"sites/current/logs/access.log"}},
		{"R/tree/**/*.log", []string{"tree/a/app.log"}},
		// The same file under two paths is found once, under the first.
		{"R/**/*.log", []string{"link.log", "releases/r42/logs/access.log", "tree/a/app.log"}},
	} {
		cfg := discover.DefaultConfig()
		cfg.Paths = []string{strings.Replace(tc.path, "R", root, 1)}
		w, _ := newWatcher(t, cfg)
		got, err := w.Scan()
		if err != nil {
			t.Fatal(err)
		}
		if g := rel(t, root, got); !slices.Equal(g, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.path, g, tc.want)
		}
	}
}

func TestScanReportsUnreadableDirectories(t *testing.T) {
	// A glob's root that is a file is an error; one that is missing is not.
	file := t.TempDir()
	touch(t, file, "f")
	cfg := discover.DefaultConfig()
	cfg.Paths = []string{file + "/f/*.log", file + "/missing/*.log"}
	w, _ := newWatcher(t, cfg)
	if got, err := w.Scan(); len(got) != 0 || err == nil || !strings.Contains(err.Error(), "f: not a directory") {
		t.Fatalf("Scan: %q, %v", got, err)
	}

	// Root reads every directory: as root, this half runs as nobody.
	t.Run("locked", func(t *testing.T) {
		if testcheck.RerunAsNobody(t) {
			return
		}
		root := t.TempDir()
		touch(t, root, "ok/a.log", "locked/b.log")
		if err := os.Chmod(filepath.Join(root, "locked"), 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(filepath.Join(root, "locked"), 0o755) }) // for TempDir's removal; it says if it fails
		if _, err := os.ReadDir(filepath.Join(root, "locked")); err == nil {
			t.Fatalf("uid %d reads a directory with mode 0", os.Geteuid())
		}
		cfg := discover.DefaultConfig()
		cfg.Paths = []string{root + "/*/*.log"}
		w, _ := newWatcher(t, cfg)
		got, err := w.Scan()
		if err == nil || !strings.Contains(err.Error(), "locked") {
			t.Fatalf("error %v, want one naming the locked directory", err)
		}
		if g := rel(t, root, got); !slices.Equal(g, []string{"ok/a.log"}) {
			t.Fatalf("got %q beside the error", g)
		}
	})
}
