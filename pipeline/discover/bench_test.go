package discover_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/pipeline/discover"
)

// BenchmarkScan scans 10,000 files: in 100 directories under "**" (a
// tenth of them rotated siblings, excluded), and in one flat directory.
func BenchmarkScan(b *testing.B) {
	for _, tc := range []struct {
		name, glob string
		files      func(i int) string
	}{
		{"tree", "/**/*.log", func(i int) string {
			if i%10 == 9 {
				return fmt.Sprintf("site%02d/logs/access-%d.log.1", i%100, i)
			}
			return fmt.Sprintf("site%02d/logs/access-%d.log", i%100, i)
		}},
		{"flat", "/*.log", func(i int) string { return fmt.Sprintf("vhost-%d.log", i) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			root := b.TempDir()
			const n = 10_000
			rels := make([]string, n)
			for i := range rels {
				rels[i] = tc.files(i)
			}
			touch(b, root, rels...)
			cfg := discover.DefaultConfig()
			cfg.Paths = []string{root + tc.glob}
			w, _ := newWatcher(b, cfg)
			found := 0
			start, cpu0 := time.Now(), cpuTime()
			for b.Loop() {
				files, err := w.Scan()
				if err != nil {
					b.Fatal(err)
				}
				found = len(files)
			}
			// files/s is wall time, which a busy machine stretches;
			// cpu-ns/file is what a scan costs.
			b.ReportMetric(float64(b.N*n)/time.Since(start).Seconds(), "files/s")
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N*n), "cpu-ns/file")
			b.ReportMetric(float64(found), "matches")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAppendToWatchedLog measures what a Watcher costs the machine
// per line appended (one write each, like nginx without a buffer) to a
// log in a directory it watches. The watch asks for no writes (see
// dirWatcher), so this should be close to nothing: with fsnotify, which
// subscribed to every write, it was ~3 µs. The writes are made in this
// process, so cpu-ns/write of "watched" less that of "unwatched" is the
// cost.
func BenchmarkAppendToWatchedLog(b *testing.B) {
	line := []byte(`203.0.113.9 - - [22/Nov/2026:10:00:00 +0000] "GET /pricing HTTP/1.1" 200 5120 "-" "Mozilla/5.0"` + "\n")
	for _, watched := range []bool{false, true} {
		b.Run(map[bool]string{false: "unwatched", true: "watched"}[watched], func(b *testing.B) {
			root := b.TempDir()
			f, err := os.Create(filepath.Join(root, "access.log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if watched {
				cfg := discover.DefaultConfig()
				cfg.Paths = []string{root + "/*.log"}
				cfg.PollInterval = time.Hour
				w, _ := newWatcher(b, cfg)
				var c collector
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- w.Run(ctx, c.found) }()
				defer func() { cancel(); <-done }()
				c.waitFor(b, f.Name())
			}
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := f.Write(line); err != nil {
					b.Fatal(err)
				}
			}
			time.Sleep(50 * time.Millisecond) // let the last events be read
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/write")
		})
	}
}
