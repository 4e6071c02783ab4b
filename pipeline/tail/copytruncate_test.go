package tail_test

import (
	"os"
	"testing"
	"time"
)

// copytruncate while the tailer follows the file: the lines written
// before logrotate's copy that the tailer had not read yet are read from
// the copy (plain, or compressed before the tailer looks), then the
// truncated file from its start. A long poll interval makes the tailer
// look only after copy, truncate and the new lines are all done.
func TestCopytruncateWhileFollowing(t *testing.T) {
	for _, compress := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "gzip"}[compress]
		t.Run(name, func(t *testing.T) {
			b := setup(t)
			b.cfg.PollInterval = 700 * time.Millisecond
			stop := b.start(t)
			defer stop()
			appendLines(t, b.log, b.lines[:1000])
			b.waitHits(t, 1000)
			time.Sleep(50 * time.Millisecond) // the tailer is asleep after its look

			appendLines(t, b.log, b.lines[1000:1500]) // not read before the copy
			copied := b.log + ".1"
			copyFile(t, b.log, copied)
			if err := os.Truncate(b.log, 0); err != nil {
				t.Fatal(err)
			}
			appendLines(t, b.log, b.lines[2000:2300])
			if compress {
				gzipFile(t, copied, copied+".gz")
				copied += ".gz"
			}
			files := []file{readLog(t, copied), readLog(t, b.log)}
			b.waitHits(t, 1800)
			b.exactly(t, 1800, files...)
		})
	}
}

// copytruncate twice and a restart, all while the tailer is stopped: the
// rest of the file it was reading is in the older copy, the next
// generation whole in the newer one, then the live file.
func TestCopytruncateWhileStopped(t *testing.T) {
	b := setup(t)
	stop := b.start(t)
	appendLines(t, b.log, b.lines[:1000])
	b.waitHits(t, 1000)
	stop()

	appendLines(t, b.log, b.lines[1000:1400])
	copyFile(t, b.log, b.log+".1")
	if err := os.Truncate(b.log, 0); err != nil {
		t.Fatal(err)
	}
	appendLines(t, b.log, b.lines[2000:2600])
	rename(t, b.log+".1", b.log+".2")
	copyFile(t, b.log, b.log+".1")
	if err := os.Truncate(b.log, 0); err != nil {
		t.Fatal(err)
	}
	appendLines(t, b.log, b.lines[3000:3200])
	files := []file{readLog(t, b.log+".2"), readLog(t, b.log+".1"), readLog(t, b.log)}

	stop = b.start(t)
	defer stop()
	b.waitHits(t, 2200)
	b.exactly(t, 2200, files...)
}

// copyFile copies src to a new file dst, as logrotate's copytruncate
// does before it truncates src.
func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
