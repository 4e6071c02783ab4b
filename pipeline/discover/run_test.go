package discover_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/pipeline/discover"
)

// abs turns slash-separated paths below root into absolute ones.
func abs(root string, rels ...string) []string {
	out := make([]string, len(rels))
	for i, r := range rels {
		out[i] = filepath.Join(root, filepath.FromSlash(r))
	}
	return out
}

// TestRunFindsFilesAsTheyAppear runs the same changes with inotify (the
// poll an hour away) and with polling alone, and wants the same reports.
func TestRunFindsFilesAsTheyAppear(t *testing.T) {
	for name, mode := range modes() {
		t.Run(name, func(t *testing.T) {
			root, outside := t.TempDir(), t.TempDir()
			touch(t, root, "a.log", "sub/b.log", "a.log.1", "sub/notes.txt")
			cfg := discover.DefaultConfig()
			cfg.Paths = []string{root + "/sub/*.log", root + "/**/*.log"}
			mode(&cfg)
			w, reg := newWatcher(t, cfg)
			var c collector
			stop := start(t, w, &c)
			c.waitFor(t, abs(root, "a.log", "sub/b.log")...)

			touch(t, root, "c.log") // created
			c.waitFor(t, abs(root, "c.log")...)

			// A new directory under "**", then a file in it.
			if err := os.MkdirAll(filepath.Join(root, "new/deeper"), 0o755); err != nil {
				t.Fatal(err)
			}
			testcheck.Eventually(t, eventually, "new directories looked at", func() bool {
				return name == "polling" || metric(t, reg, "pagewatch_ingest_discover_watched_directories", "") >= 4
			})
			touch(t, root, "new/deeper/d.log")
			// Directories and a file made at once, before any watch can be
			// placed on them.
			touch(t, root, "x/y/z/e.log")
			c.waitFor(t, abs(root, "new/deeper/d.log", "x/y/z/e.log")...)

			// Renamed into place: a file, and a directory holding one.
			touch(t, outside, "f.tmp", "dir/g.log")
			if err := os.Rename(filepath.Join(outside, "f.tmp"), filepath.Join(root, "f.log")); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(outside, "dir"), filepath.Join(root, "moved")); err != nil {
				t.Fatal(err)
			}
			c.waitFor(t, abs(root, "f.log", "moved/g.log")...)

			// Excluded and unmatched files, then one that is found: by
			// then the others were looked at too.
			touch(t, root, "c.log.1", "c.log.2.gz", "new/h.txt", "zz.log")
			c.waitFor(t, abs(root, "zz.log")...)
			stop()

			want := abs(root, "a.log", "c.log", "f.log", "moved/g.log", "new/deeper/d.log", "sub/b.log", "x/y/z/e.log", "zz.log")
			got, count := c.snapshot()
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("reported %q\nwant     %q (counts %v)", rel(t, root, got), rel(t, root, want), count)
			}
			for _, p := range want {
				f := c.lastFound(p)
				atStart := p == filepath.Join(root, "a.log") || p == filepath.Join(root, "sub/b.log")
				pattern := 1
				if p == filepath.Join(root, "sub/b.log") {
					pattern = 0 // the first glob that matches
				}
				if f.AtStart != atStart || f.Pattern != pattern {
					t.Errorf("%s: %+v, want at start %v, pattern %d", p, f, atStart, pattern)
				}
			}
			// What Run found is what a scan finds.
			scanned, err := w.Scan()
			if err != nil || !slices.Equal(scanned, want) {
				t.Fatalf("Scan: %q, %v", rel(t, root, scanned), err)
			}
			how := "event"
			if name == "polling" {
				how = "scan"
			}
			if n := metric(t, reg, "pagewatch_ingest_discover_files_found_total", how); n < 6 {
				t.Errorf("files found by %s: %v, want at least the 6 made while running", how, n)
			}
		})
	}
}

// A glob whose root directory does not exist yet is found when it is
// created, with its parents.
func TestRunRootAppearsLater(t *testing.T) {
	for name, mode := range modes() {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			cfg := discover.DefaultConfig()
			cfg.Paths = []string{root + "/later/logs/*.log", root + "/other/access.log"}
			mode(&cfg)
			w, _ := newWatcher(t, cfg)
			var c collector
			start(t, w, &c)
			time.Sleep(50 * time.Millisecond) // let Run start watching
			touch(t, root, "later/logs/a.log")
			c.waitFor(t, abs(root, "later/logs/a.log")...)
			touch(t, root, "other/access.log")
			c.waitFor(t, abs(root, "other/access.log")...)
		})
	}
}

// A path is reported again once it was seen gone and is back, never
// while it exists: rotation keeps the path, so it is not reported again.
func TestRunDeletedAndRecreated(t *testing.T) {
	for name, mode := range modes() {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			touch(t, root, "a.log", "b.log", "d/x.log")
			cfg := discover.DefaultConfig()
			cfg.Paths = []string{root + "/**/*.log"}
			mode(&cfg)
			w, reg := newWatcher(t, cfg)
			var c collector
			start(t, w, &c)
			a, b := filepath.Join(root, "a.log"), filepath.Join(root, "b.log")
			c.waitFor(t, a, b, filepath.Join(root, "d/x.log"))

			if err := os.Remove(a); err != nil {
				t.Fatal(err)
			}
			testcheck.Eventually(t, eventually, "a.log seen gone", func() bool {
				return metric(t, reg, "pagewatch_ingest_discover_files", "") == 2
			})
			touch(t, root, "a.log")
			testcheck.Eventually(t, eventually, "a.log reported again", func() bool {
				_, count := c.snapshot()
				return count[a] == 2
			})

			// A directory removed with its files, and made again.
			x := filepath.Join(root, "d/x.log")
			if err := os.RemoveAll(filepath.Join(root, "d")); err != nil {
				t.Fatal(err)
			}
			testcheck.Eventually(t, eventually, "d/x.log seen gone", func() bool {
				return metric(t, reg, "pagewatch_ingest_discover_files", "") == 2
			})
			touch(t, root, "d/x.log")
			testcheck.Eventually(t, eventually, "d/x.log reported again", func() bool {
				_, count := c.snapshot()
				return count[x] == 2
			})

			// Rotation of b.log by rename, the new file made at once.
			if err := os.Rename(b, b+".1"); err != nil {
				t.Fatal(err)
			}
			touch(t, root, "b.log", "c.log")
			testcheck.Eventually(t, eventually, "c.log reported", func() bool {
				_, count := c.snapshot()
				return count[filepath.Join(root, "c.log")] == 1
			})
			if _, count := c.snapshot(); count[b] > 2 {
				t.Fatalf("b.log reported %d times", count[b])
			}
		})
	}
}

// Many files made at once are each reported once, with inotify alone,
// with polling alone, and with both racing.
func TestRunManyFilesAtOnce(t *testing.T) {
	ms := modes()
	ms["both"] = func(c *discover.Config) {
		c.Inotify = true
		c.PollInterval = 10 * time.Millisecond
		c.Debounce = 5 * time.Millisecond
	}
	for name, mode := range ms {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			touch(t, root, "burst/first.log")
			cfg := discover.DefaultConfig()
			cfg.Paths = []string{root + "/**/*.log"}
			mode(&cfg)
			w, reg := newWatcher(t, cfg)
			var c collector
			start(t, w, &c)
			c.waitFor(t, filepath.Join(root, "burst/first.log"))

			var want []string
			for i := range 1000 {
				// Half in the existing directory, half in new ones.
				rel := "burst/" + strconv.Itoa(i) + ".log"
				if i%2 == 1 {
					rel = fmt.Sprintf("new/%d/%d.log", i%10, i)
				}
				want = append(want, rel)
			}
			touch(t, root, want...)
			want = abs(root, append(want, "burst/first.log")...)
			c.waitFor(t, want...)
			// Let some more scans pass over the same files.
			scans := metric(t, reg, "pagewatch_ingest_discover_rescans_total", "poll")
			if name != "inotify" {
				testcheck.Eventually(t, eventually, "three more scans", func() bool {
					return metric(t, reg, "pagewatch_ingest_discover_rescans_total", "poll") >= scans+3
				})
			} else {
				time.Sleep(200 * time.Millisecond)
			}
			got, _ := c.snapshot()
			if len(got) != len(want) {
				t.Fatalf("%d reports for %d files", len(got), len(want))
			}
		})
	}
}

// When inotify's queue overflows, events are lost: a full scan finds
// what they would have told.
func TestRunOverflowRescans(t *testing.T) {
	limit := 16384
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events"); err == nil {
		limit, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	testcheck.Require(t, limit > 0 && limit <= 100_000,
		fmt.Sprintf("fs.inotify.max_queued_events is %d, too many files to make to overflow it", limit),
		"set it to at most 100000, e.g. sysctl fs.inotify.max_queued_events=16384 (the kernel's default)")
	root := t.TempDir()
	touch(t, root, "first.log")
	cfg := discover.DefaultConfig()
	cfg.Paths = []string{root + "/*.log"}
	cfg.PollInterval = time.Hour
	w, reg := newWatcher(t, cfg)
	// The first report blocks Run until the files are made, so the
	// kernel's queue fills.
	release := make(chan struct{})
	var c collector
	first := true
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- w.Run(ctx, func(f discover.Found) {
			if first {
				first = false
				<-release
			}
			c.found(f)
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	n := limit + 8192 // beyond the kernel's queue and the watcher's read buffer
	names := make([]string, n)
	for i := range names {
		names[i] = strconv.Itoa(i) + ".log"
	}
	touch(t, root, names...)
	close(release)
	c.waitFor(t, abs(root, append(names, "first.log")...)...)
	if got := metric(t, reg, "pagewatch_ingest_discover_rescans_total", "overflow"); got < 1 {
		t.Fatalf("overflow rescans: %v", got)
	}
	if got, _ := c.snapshot(); len(got) != n+1 {
		t.Fatalf("%d reports for %d files", len(got), n+1)
	}
}

func TestRunCancelReturnsPromptly(t *testing.T) {
	for name, mode := range modes() {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			touch(t, root, "a.log")
			cfg := discover.DefaultConfig()
			cfg.Paths = []string{root + "/**/*.log"}
			mode(&cfg)
			cfg.Debounce = time.Second // cancelled with a change pending
			w, _ := newWatcher(t, cfg)
			var c collector
			stop := start(t, w, &c)
			c.waitFor(t, filepath.Join(root, "a.log"))
			touch(t, root, "b.log")
			stop() // fails if Run does not return

			// Run can run again, and reports afresh.
			var c2 collector
			start(t, w, &c2)
			c2.waitFor(t, abs(root, "a.log", "b.log")...)
		})
	}
}

func TestRunTwiceAtOnceRefused(t *testing.T) {
	root := t.TempDir()
	cfg := discover.DefaultConfig()
	cfg.Paths = []string{root + "/*.log"}
	w, _ := newWatcher(t, cfg)
	var c collector
	start(t, w, &c)
	time.Sleep(20 * time.Millisecond)
	if err := w.Run(context.Background(), c.found); err == nil {
		t.Fatal("a second Run at once was accepted")
	}
}
