package tail_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/testcheck"
)

// logrotate ran while ingest was stopped: the lines written to the old
// file after the saved position are read from the rotated file, its last
// line without a newline too, then the new file from its start.
func TestRotatedWhileStopped(t *testing.T) {
	for _, compress := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "gzip"}[compress]
		t.Run(name, func(t *testing.T) {
			b := setup(t)
			stop := b.start(t)
			appendLines(t, b.log, b.lines[:1000]) // N
			b.waitHits(t, 1000)
			stop()

			writeLines(t, b.log, b.lines[1000:1501], false) // M = 501, the last without newline
			rotated := b.log + ".1"
			rename(t, b.log, rotated)
			if compress {
				gzipFile(t, rotated, rotated+".gz")
				rotated += ".gz"
			}
			appendLines(t, b.log, b.lines[2000:2700]) // K = 700
			files := []file{readLog(t, rotated), readLog(t, b.log)}

			stop = b.start(t)
			b.waitHits(t, 2201)
			stop()
			b.exactly(t, 2201, files...)
		})
	}
}

// delaycompress: a rotation is compressed one rotation later, so after a
// rotation while stopped the file read last is access.log.1 and an older
// one, published long ago, is access.log.2.gz; after two rotations while
// stopped the file read last is access.log.2.gz, and access.log.1 was
// never read at all.
func TestRotatedWhileStoppedDelayCompress(t *testing.T) {
	b := setup(t)
	a, one, two := b.log, b.log+".1", b.log+".2.gz"
	stop := b.start(t)
	appendLines(t, a, b.lines[:1000])
	b.waitHits(t, 1000)
	rename(t, a, one) // rotated while running
	appendLines(t, a, b.lines[1000:1600])
	b.waitHits(t, 1600)
	stop()

	// One rotation while stopped.
	appendLines(t, a, b.lines[1600:1900])
	gzipFile(t, one, two)
	rename(t, a, one)
	appendLines(t, a, b.lines[1900:2400])
	stop = b.start(t)
	b.waitHits(t, 2400)
	stop()
	b.exactly(t, 2400, readLog(t, two), readLog(t, one), readLog(t, a))

	// Two rotations while stopped: the file read last ends up in
	// access.log.2.gz, the one after it in access.log.1, never read.
	older := readLog(t, two)
	appendLines(t, a, b.lines[2400:2600])
	rename(t, two, b.log+".3.gz")
	gzipFile(t, one, two)
	rename(t, a, one)
	appendLines(t, a, b.lines[2600:3000])
	gzipFile(t, one, b.log+".2.gz.tmp") // the second rotation
	rename(t, b.log+".3.gz", b.log+".4.gz")
	rename(t, two, b.log+".3.gz")
	rename(t, b.log+".2.gz.tmp", two)
	rename(t, a, one)
	appendLines(t, a, b.lines[3000:3300])
	files := []file{older, readLog(t, b.log+".3.gz"), readLog(t, two), readLog(t, one), readLog(t, a)}
	stop = b.start(t)
	b.waitHits(t, 3300)
	stop()
	b.exactly(t, 3300, files...)
}

// No rotated sibling holds the saved file: the new file is read from its
// start and the loss is logged as such.
func TestReplacedWhileStoppedNoSibling(t *testing.T) {
	b := setup(t)
	stop := b.start(t)
	appendLines(t, b.log, b.lines[:300])
	b.waitHits(t, 300)
	stop()
	if err := os.Remove(b.log); err != nil {
		t.Fatal(err)
	}
	appendLines(t, b.log, b.lines[300:500])
	logs := b.captureLogs(t, slog.LevelWarn)
	stop = b.start(t)
	b.waitHits(t, 500)
	stop()
	if !strings.Contains(logs.String(), "missed_bytes=unknown") {
		t.Fatalf("no warning about the missed bytes:\n%s", logs)
	}
}

// A deleted file is read to its end (its last line without a newline
// too), closed once quiet, and the path is followed again when it
// reappears, from its start, with no warning after a restart in between.
func TestDeletedFileIsClosed(t *testing.T) {
	b := setup(t)
	logs := b.captureLogs(t, slog.LevelWarn)
	stop := b.start(t)
	writeLines(t, b.log, b.lines[:801], false)
	b.waitHits(t, 800)
	deleted := readLog(t, b.log)
	if err := os.Remove(b.log); err != nil {
		t.Fatal(err)
	}
	b.waitHits(t, 801)
	testcheck.Eventually(t, 10*time.Second, "the deleted file to be closed", func() bool { return !holdsOpen(t, b.log) })
	stop()

	stop = b.start(t)
	time.Sleep(100 * time.Millisecond) // the tailer waits for the path
	appendLines(t, b.log, b.lines[1000:1300])
	b.waitHits(t, 1101)
	stop()
	b.exactly(t, 1101, deleted, readLog(t, b.log))
	if s := logs.String(); strings.Contains(s, "level=WARN") {
		t.Fatalf("warnings:\n%s", s)
	}
}

// A file renamed away with no successor is not deleted: it is kept open,
// since the server may still write to it.
func TestRenamedWithoutSuccessorStaysOpen(t *testing.T) {
	b := setup(t)
	stop := b.start(t)
	appendLines(t, b.log, b.lines[:200])
	b.waitHits(t, 200)
	rename(t, b.log, b.log+".1")
	time.Sleep(3 * b.cfg.RotateGrace)
	appendLines(t, b.log+".1", b.lines[200:300]) // still written
	b.waitHits(t, 300)
	if !holdsOpen(t, b.log+".1") {
		t.Fatal("the renamed file was closed")
	}
	appendLines(t, b.log, b.lines[300:400])
	b.waitHits(t, 400)
	stop()
	b.exactly(t, 400, readLog(t, b.log+".1"), readLog(t, b.log))
}

// holdsOpen reports whether this process has a descriptor on path, deleted
// or not.
func holdsOpen(t testing.TB, path string) bool {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		testcheck.SkipOutsideCI(t, fmt.Sprintf("no /proc to list open descriptors in: %v", err))
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && (target == path || target == path+" (deleted)") {
			return true
		}
	}
	return false
}
