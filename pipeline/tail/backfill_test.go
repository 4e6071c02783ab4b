package tail_test

import (
	"context"
	"log/slog"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/internal/progress"
	"github.com/pagewatch/pagewatch/internal/syncbuf"
	"github.com/pagewatch/pagewatch/pipeline/tail"
)

// siblingsOnDisk writes, like logrotate with compress and delaycompress
// would have left them, two compressed rotations, a plain one whose last
// line lacks its newline, and the live file: 7,000 lines in all.
func (b *bundle) siblingsOnDisk(t *testing.T) []file {
	t.Helper()
	writeLines(t, b.log+".3", b.lines[0:2000], true)
	setMtime(t, b.log+".3", 3*time.Hour)
	gzipFile(t, b.log+".3", b.log+".3.gz")
	writeLines(t, b.log+".2", b.lines[2000:4000], true)
	setMtime(t, b.log+".2", 2*time.Hour)
	gzipFile(t, b.log+".2", b.log+".2.gz")
	writeLines(t, b.log+".1", b.lines[4000:6001], false)
	setMtime(t, b.log+".1", time.Hour)
	appendLines(t, b.log, b.lines[6001:7000])
	return []file{readLog(t, b.log+".3.gz"), readLog(t, b.log+".2.gz"), readLog(t, b.log+".1"), readLog(t, b.log)}
}

func TestBackfillFromStart(t *testing.T) {
	b := setup(t)
	b.cfg.StartAt = "end" // --from-start reads a file without a position from its start all the same
	files := b.siblingsOnDisk(t)
	logs := b.captureLogs(t, slog.LevelInfo)
	reg := prometheus.NewRegistry()
	var shown syncbuf.Buffer
	opts := tail.BackfillOptions{Progress: &shown, Terminal: progress.TerminalOff, Only: true}
	if err := b.runBackfill(context.Background(), t, reg, opts); err != nil {
		t.Fatal(err)
	}
	b.exactly(t, 7000, files...)

	// The progress display's summary and the metrics count the same.
	planned := metric(t, reg, "pagewatch_ingest_tail_backfill_planned_bytes", b.log)
	read := metric(t, reg, "pagewatch_ingest_tail_backfill_read_bytes_total", b.log)
	lines := metric(t, reg, "pagewatch_ingest_tail_backfill_lines_total", b.log)
	if planned == 0 || read != planned || lines != 7000 {
		t.Fatalf("backfill metrics: planned %v bytes, read %v bytes, %v lines; want read = planned, 7000 lines", planned, read, lines)
	}
	m := regexp.MustCompile(`msg="progress done" bytes=(\d+) lines=(\d+)`).FindStringSubmatch(logs.String())
	if m == nil || m[1] != strconv.Itoa(int(read)) || m[2] != "7000" {
		t.Fatalf("progress summary %q; want bytes=%v lines=7000", m, read)
	}

	// A second run finds everything published and publishes nothing.
	before := b.lastSeq(t)
	if err := b.runBackfill(context.Background(), t, nil, tail.BackfillOptions{Only: true}); err != nil {
		t.Fatal(err)
	}
	if after := b.lastSeq(t); after != before {
		t.Fatalf("second --from-start run published %d messages", after-before)
	}

	// After a backfill that does not stop, the file is followed as usual.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.runBackfill(ctx, t, nil, tail.BackfillOptions{}) }()
	appendLines(t, b.log, b.lines[7000:7500])
	b.waitHits(t, 7500)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	files[3] = readLog(t, b.log)
	b.exactly(t, 7500, files...)
}

// A backfill killed part way, twice, and run again publishes every line
// once.
func TestBackfillInterrupted(t *testing.T) {
	b := setup(t)
	b.cfg.BatchLines = 50 // 140 messages: somewhere to stop in the middle
	files := b.siblingsOnDisk(t)
	for _, stopAfter := range []int64{15, 60} {
		var published atomic.Int64
		ctx, cancel := context.WithCancel(context.Background())
		sub, err := b.bus.Conn.Subscribe(b.bus.HitsSubject("test", ">"), func(*nats.Msg) {
			if published.Add(1) == stopAfter {
				cancel()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.runBackfill(ctx, t, nil, tail.BackfillOptions{Only: true}); err != nil {
			t.Fatal(err)
		}
		if err := sub.Unsubscribe(); err != nil {
			t.Fatal(err)
		}
		cancel()
		n := len(b.published(t))
		if n == 0 || n >= 7000 {
			t.Fatalf("interrupted run left %d hits; the test wants it stopped part way", n)
		}
		t.Logf("stopped after %d messages: %d hits published", stopAfter, n)
	}
	if err := b.runBackfill(context.Background(), t, nil, tail.BackfillOptions{Only: true}); err != nil {
		t.Fatal(err)
	}
	b.exactly(t, 7000, files...)
}

// The input's position is in a file rotated (and compressed) while ingest
// was stopped, beside an older rotation never published: the backfill
// leaves the first to the follower, which continues it on the input's
// subject, and publishes the second.
func TestBackfillAfterRotationWhileStopped(t *testing.T) {
	b := setup(t)
	stop := b.start(t)
	appendLines(t, b.log, b.lines[:1000])
	b.waitHits(t, 1000)
	stop()
	appendLines(t, b.log, b.lines[1000:1500])
	rename(t, b.log, b.log+".1")
	gzipFile(t, b.log+".1", b.log+".1.gz")
	appendLines(t, b.log, b.lines[1500:2000])
	writeLines(t, b.log+".2", b.lines[5000:6000], true)
	setMtime(t, b.log+".2", 2*time.Hour)
	gzipFile(t, b.log+".2", b.log+".2.gz")

	files := []file{readLog(t, b.log+".2.gz"), readLog(t, b.log+".1.gz"), readLog(t, b.log)}
	if err := b.runBackfill(context.Background(), t, nil, tail.BackfillOptions{Only: true}); err != nil {
		t.Fatal(err)
	}
	b.exactly(t, 3000, files...)

	// access.log.1.gz was continued on the input's subject, which cannot
	// say the file is complete without reading it: the second run reads
	// it again, finds nothing new and records its end on its own subject
	// (one empty message); the third run does not open it.
	for run, want := range []uint64{1, 0} {
		before := b.lastSeq(t)
		if err := b.runBackfill(context.Background(), t, nil, tail.BackfillOptions{Only: true}); err != nil {
			t.Fatal(err)
		}
		if got := b.lastSeq(t) - before; got != want {
			t.Fatalf("run %d published %d messages, want %d", run+2, got, want)
		}
		b.exactly(t, 3000, files...)
	}
}

// Lines a server wrote to a rotated file after the tailer had moved on to
// its successor are published by a backfill, past the end recorded on the
// input's subject.
func TestBackfillRestOfFileFollowedBefore(t *testing.T) {
	b := setup(t)
	stop := b.start(t)
	appendLines(t, b.log, b.lines[:500])
	b.waitHits(t, 500)
	rename(t, b.log, b.log+".1")
	appendLines(t, b.log, b.lines[500:800])
	b.waitHits(t, 800)
	time.Sleep(3 * b.cfg.RotateGrace) // switched to the successor
	stop()
	appendLines(t, b.log+".1", b.lines[800:900]) // too late
	setMtime(t, b.log+".1", time.Minute)

	if err := b.runBackfill(context.Background(), t, nil, tail.BackfillOptions{Only: true}); err != nil {
		t.Fatal(err)
	}
	b.exactly(t, 900, readLog(t, b.log+".1"), readLog(t, b.log))
}
