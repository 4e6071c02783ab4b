package tail_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Copytruncate keeps the live file's inode, so each generation of its
// content goes to a copy, and a generation the tailer did not look at
// while it was at the path exists only among the rotated siblings. These
// tests arrange the ones seen in TestTailCopytruncate*UnderKills (e2e),
// where a whole generation was never published.

// copytruncate does what logrotate's copytruncate does to path: shift
// the numbered copies (.1 → .2, compressing the shifted one when gz:
// delaycompress), copy the live file to .1, truncate it.
func copytruncate(t *testing.T, path string, gz bool) {
	t.Helper()
	if _, err := os.Stat(path + ".1"); err == nil {
		rename(t, path+".1", path+".2")
		if gz {
			gzipFile(t, path+".2", path+".2.gz")
		}
	}
	copyFile(t, path, path+".1")
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
}

// Two copytruncates between two looks of the tailer (a tailer slowed
// down, or busy with a restart's recovery): the rest of the generation it
// was reading is in .2, the next generation whole in .1, and the live
// file holds a third. Reading only the copy of the file it was reading
// before the live file lost the whole middle generation.
func TestCopytruncateTwiceBetweenLooks(t *testing.T) {
	for _, gz := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "gzip"}[gz], func(t *testing.T) {
			b := setup(t)
			b.cfg.PollInterval = 700 * time.Millisecond
			stop := b.start(t)
			defer stop()
			appendLines(t, b.log, b.lines[:1000])
			b.waitHits(t, 1000)
			time.Sleep(50 * time.Millisecond) // the tailer is asleep after its look

			appendLines(t, b.log, b.lines[1000:1400]) // not read before the copy
			copytruncate(t, b.log, gz)
			appendLines(t, b.log, b.lines[2000:2600]) // never at the path when looked at
			copytruncate(t, b.log, gz)
			appendLines(t, b.log, b.lines[3000:3200])
			older := b.log + ".2"
			if gz {
				older += ".gz"
			}
			files := []file{readLog(t, older), readLog(t, b.log+".1"), readLog(t, b.log)}
			b.waitHits(t, 2200)
			b.exactly(t, 2200, files...)
		})
	}
}

// A restart finds the file it was reading copied to .1 (the live file
// truncated and written again), and while it reads the rest of that copy
// logrotate runs again: the generation that was at the path when the
// restart began is now a copy too. Reading the live file from its start
// after the recovery lost that whole generation. A copy is never written
// to once made, so the recovery does not wait rotate_grace on it either;
// the long grace here is what made the second rotation land inside the
// recovery every time before.
func TestCopytruncateDuringRecovery(t *testing.T) {
	b := setup(t)
	b.cfg.RotateGrace = 1500 * time.Millisecond
	stop := b.start(t)
	appendLines(t, b.log, b.lines[:1000])
	b.waitHits(t, 1000)
	stop()

	appendLines(t, b.log, b.lines[1000:1400])
	copytruncate(t, b.log, false)
	appendLines(t, b.log, b.lines[2000:2600])

	stop = b.start(t)
	defer stop()
	time.Sleep(300 * time.Millisecond) // inside the recovery, with the old grace
	copytruncate(t, b.log, true)
	appendLines(t, b.log, b.lines[3000:3200])
	files := []file{readLog(t, b.log+".2.gz"), readLog(t, b.log+".1"), readLog(t, b.log)}
	b.waitHits(t, 2200)
	b.exactly(t, 2200, files...)
}

// A restart inside copytruncate's window between the copy and the
// truncate: the newest copy has the live file's head, so it is not taken
// for a rotated file (it is being made, and the live file is read
// anyway). Then logrotate truncates the live file while the restart reads
// the rest of the file its position is in: what the live file held when
// the restart began is now only in that copy, which the restart had
// passed over. The truncate is done by the log handler, on the restart's
// line saying it reads the rest of the rotated file: after the siblings
// were listed, every time.
func TestCopytruncateWindowDuringRecovery(t *testing.T) {
	b := setup(t)
	stop := b.start(t)
	appendLines(t, b.log, b.lines[:1000])
	b.waitHits(t, 1000)
	stop()

	appendLines(t, b.log, b.lines[1000:1400])
	copytruncate(t, b.log, false)
	appendLines(t, b.log, b.lines[2000:2600])
	rename(t, b.log+".1", b.log+".2")
	copyFile(t, b.log, b.log+".1") // the copy is made; the truncate comes next

	var once sync.Once
	b.logger = slog.New(onMessage{Handler: b.logger.Handler(), msg: "file was rotated while ingest was stopped", do: func() {
		once.Do(func() {
			if err := os.Truncate(b.log, 0); err != nil {
				t.Error(err)
			}
			appendLines(t, b.log, b.lines[3000:3200])
		})
	}})
	stop = b.start(t)
	defer stop()
	b.waitHits(t, 2200)
	b.exactly(t, 2200, readLog(t, b.log+".2"), readLog(t, b.log+".1"), readLog(t, b.log))
}

// onMessage is a log handler that calls do when a record's message starts
// with msg, whatever its level, before passing it on.
type onMessage struct {
	slog.Handler
	msg string
	do  func()
}

func (h onMessage) Enabled(context.Context, slog.Level) bool { return true }

func (h onMessage) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, h.msg) {
		h.do()
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h onMessage) WithAttrs(as []slog.Attr) slog.Handler {
	return onMessage{Handler: h.Handler.WithAttrs(as), msg: h.msg, do: h.do}
}

func (h onMessage) WithGroup(name string) slog.Handler {
	return onMessage{Handler: h.Handler.WithGroup(name), msg: h.msg, do: h.do}
}
