package tail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/pagewatch/pagewatch/domain/hit"
)

// Headers of a hits message. Start and End are byte offsets in the file.
const (
	HeaderFile  = "Pagewatch-File"
	HeaderPath  = "Pagewatch-Path"
	HeaderStart = "Pagewatch-Start"
	HeaderEnd   = "Pagewatch-End"
	HeaderLines = "Pagewatch-Lines"
	// HeaderEOF marks the last message of a file known to be complete: a
	// deleted file once read, a rotated sibling read to its end.
	HeaderEOF = "Pagewatch-Eof"
)

// errResync means the stream holds a position other than ours: the
// follower must reopen its file at the stream's position.
var errResync = errors.New("position in stream moved")

const readChunk = 256 << 10

// follower tails one file.
type follower struct {
	*Tailer
	in      Input
	subject string
	logger  *slog.Logger
	state   *fileState // lag and age of the input, for the metrics; nil when reading a sibling

	// key is the absolute path the follower is known by in its Run. A
	// glob's file (glob) ends once gone (errGone); one that appeared
	// while ingest ran (fromStart) is read from its beginning.
	key       string
	glob      bool
	fromStart bool
	current   atomic.Pointer[fileKey] // the file read now, for other goroutines
	// The file's lease and subject record (lease.go): the key of both,
	// the instance and path the subject is named by, and when the record
	// was last written.
	leaseKey string
	pub      fileRecord
	recordAt time.Time

	f        *os.File
	id       identity
	finished bool   // reading a complete rotated file: its identity is fixed (see publish)
	offset   int64  // end of the last line consumed
	readPos  int64  // end of the bytes read into pending
	pending  []byte // bytes read past offset: at most one incomplete line
	skipping bool   // inside a line longer than MaxLineBytes

	lastSeq     uint64 // stream sequence of the last message on subject
	lastPublish time.Time
	keepalive   time.Duration // re-publish the position of a quiet file this often
	lastData    time.Time     // when the file last had new bytes
	rotatedAt   time.Time     // when a successor appeared at the path; zero if none
	batchStart  int64
	batch       hitBatch // the lines consumed since batchStart
	linesRead   int64    // lines consumed since the follower started, for progress
	eof         bool     // the next publish is the last of a complete file
	// While one batch is on its way to JetStream (flying), the next is
	// encoded into the other buffer (spare holds the flying one's).
	flying *flight
	spare  hit.Encoder

	// With --from-start: the run the follower takes part in, how its
	// reading is counted, the rotated siblings it publishes first, and
	// whether it has read its live file to the end once.
	backfill *backfillRun
	meter    *meter
	tasks    []siblingTask
	caughtUp bool
}

// errBackfillDone stops a follower of `--backfill-only` once its file has
// been read to the end.
var errBackfillDone = errors.New("backfill done")

// errGone ends the follower of a glob's file: the file is gone and its
// path has stayed empty.
var errGone = errors.New("file gone")

// work follows the file (run holds its lease meanwhile).
func (fw *follower) work(ctx context.Context) error {
	if err := fw.runTasks(ctx, fw.tasks); err != nil {
		return err
	}
	fw.tasks = nil // done: not again after a lost lease
	for {
		err := fw.follow(ctx)
		if fw.f != nil {
			fw.f.Close()
			fw.f = nil
			fw.current.Store(nil)
		}
		switch {
		case errors.Is(err, errResync):
			fw.logger.Warn("position in JetStream differs from ours; resuming from the stream's (is another tailer publishing this file: one with the same instance name, or one whose lease on it lapsed?)")
		case errors.Is(err, errReopen):
		case errors.Is(err, errBackfillDone):
			return nil
		default:
			return err
		}
	}
}

func (fw *follower) follow(ctx context.Context) error {
	if err := fw.open(ctx); err != nil {
		return err
	}
	for {
		linesBefore := fw.linesRead
		n, err := fw.readLines(ctx, fw.f)
		if err != nil {
			return err
		}
		fw.observe(n, linesBefore)
		if n > 0 {
			fw.lastData = time.Now()
			continue
		}
		// At the end of what the file has. The batch sent while reading
		// is stored first, then what was read is published, unless
		// inside an over-long line: a position must fall between lines.
		if err := fw.settle(ctx); err != nil {
			return err
		}
		if !fw.skipping && (fw.batch.lines > 0 || time.Since(fw.lastPublish) > fw.keepalive) {
			// A quiet file re-publishes its position now and then, so it
			// does not age out of the stream with the last batch.
			if err := fw.publish(ctx); err != nil {
				return err
			}
		}
		if fw.batch.lines == 0 {
			fw.state.allPublished()
		}
		if fw.backfill != nil && !fw.caughtUp {
			fw.catchUpDone()
			if fw.backfill.opts.Only {
				return errBackfillDone
			}
		}
		switched, err := fw.checkRotation(ctx)
		if err != nil {
			return err
		}
		if switched {
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(fw.cfg.PollInterval):
		}
	}
}

// observe updates the metrics after a read of n bytes: the file's lag
// behind its end, when its unpublished bytes were first seen, and, while
// a backfill catches up with the file, its progress.
func (fw *follower) observe(n int, linesBefore int64) {
	if fw.backfill != nil && !fw.caughtUp {
		fw.meter.add(int64(n), fw.linesRead-linesBefore)
	}
	if n > 0 {
		fw.state.unpublishedSeen(time.Now())
	}
	if st, err := fw.f.Stat(); err == nil {
		fw.state.setLag(st.Size() - fw.published())
	}
}

// open finds the file's position in the stream and opens the file there,
// waiting for the file to exist. When the stream's file is no longer at
// the path (rotated while ingest was stopped), it first reads the rest of
// that file from among the path's rotated siblings.
func (fw *follower) open(ctx context.Context) error {
	pos, err := retrying(ctx, fw, "read position", func() (*position, error) { return fw.lastPosition(ctx) })
	if err != nil {
		return err
	}
	fw.lastSeq, fw.lastPublish = 0, time.Now()
	if pos != nil {
		fw.lastSeq, fw.lastPublish = pos.seq, pos.at
	}
	// Whatever a previous attempt had read but not published is read again.
	fw.pending, fw.skipping = fw.pending[:0], false
	fw.rotatedAt = time.Time{}
	fw.batch.reset()
	f, err := os.Open(fw.in.Path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("open: %w", err)
	}
	same := false
	if pos != nil && f != nil {
		if same, err = sameFile(f, pos.id); err != nil {
			f.Close()
			return err
		}
	}
	lost := false
	if pos != nil && !same && !pos.eof {
		found, err := fw.recoverRotated(ctx, pos)
		if err != nil {
			if f != nil {
				f.Close()
			}
			return err
		}
		lost = !found
	}
	appeared := false
	if f == nil {
		if fw.backfill != nil && !fw.caughtUp {
			// Nothing to catch up with: the backfill of this input is over.
			fw.catchUpDone()
			if fw.backfill.opts.Only {
				return errBackfillDone
			}
		}
		if f, err = fw.waitForFile(ctx); err != nil {
			return err
		}
		appeared = true
		// A missing file that comes back may be the one we were reading
		// (a directory mounted late, a file moved away and back).
		if pos != nil {
			if same, err = sameFile(f, pos.id); err != nil {
				f.Close()
				return err
			}
		}
	}
	fw.f = f
	if fw.id, err = identify(fw.f); err != nil {
		return err
	}
	fw.setCurrent()
	size, err := fw.f.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("size: %w", err)
	}
	var start int64
	marker := false
	switch {
	case same && size >= pos.end:
		start = pos.end
	case same:
		fw.logger.Warn("file shrank while ingest was stopped; reading it from the beginning", "size", size, "saved_offset", pos.end)
	case pos != nil:
		// Another file than the stream's: a new one, read from its start.
		if lost {
			fw.logger.Warn("file was replaced while ingest was stopped and is not among its rotated siblings; lines written to it after the saved offset are lost, reading the new file from the beginning",
				"saved_file", pos.id.String(), "saved_offset", pos.end, "missed_bytes", "unknown")
		}
	case appeared || fw.fromStart || fw.cfg.StartAt == "beginning" || fw.backfill != nil:
		start = 0
	default:
		start, marker = size, true
	}
	fw.offset, fw.readPos, fw.batchStart = start, start, start
	fw.logger.Log(ctx, fw.logLevel(), "following", "offset", start, "file_id", fw.id.String(), "stream_seq", fw.lastSeq)
	if fw.backfill != nil && !fw.caughtUp {
		fw.meter.setFile(fw.in.Path)
		fw.meter.addTotal(size - start)
	}
	if marker {
		// Record where we start, so a restart before the first new line
		// resumes here rather than at the (by then later) end.
		return fw.publish(ctx)
	}
	return nil
}

// waitForFile polls until the input's path can be opened. A glob's file
// is waited for only until the Watcher will have seen the path empty
// (linger): it reports the path if it comes back, and a follower per file
// ever matched would otherwise wait forever.
func (fw *follower) waitForFile(ctx context.Context) (*os.File, error) {
	if !fw.glob {
		fw.logger.Info("waiting for file to appear")
	}
	since := time.Now()
	for {
		if fw.glob && time.Since(since) > fw.files.linger {
			return nil, errGone
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(fw.cfg.PollInterval):
		}
		f, err := os.Open(fw.in.Path)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("open: %w", err)
		}
	}
}

// readError is a failed read of the file, as opposed to a failed publish.
type readError struct {
	off int64
	err error
}

func (e *readError) Error() string { return fmt.Sprintf("read at %d: %v", e.off, e.err) }
func (e *readError) Unwrap() error { return e.err }

// readLines reads what src has past readPos and consumes its complete
// lines, sending each batch as it fills. It returns the bytes read. The
// last batch sent may still be in flight when it returns without error;
// the caller settles it before it publishes, or leaves the file (finish,
// readFinished, follow). On error nothing is in flight.
func (fw *follower) readLines(ctx context.Context, src io.ReaderAt) (int, error) {
	n, err := fw.readChunk(ctx, src)
	if err != nil {
		// A batch in flight is stored or failed before the error is
		// handled: a damaged .gz publishes the lines read before the
		// damage, after it.
		if serr := fw.settle(ctx); serr != nil {
			return n, serr
		}
	}
	return n, err
}

// published is where the bytes not yet stored in JetStream start: the
// start of the batch in flight, or else of the batch being read.
func (fw *follower) published() int64 {
	if fw.flying != nil {
		return fw.flying.start
	}
	return fw.batchStart
}

func (fw *follower) readChunk(ctx context.Context, src io.ReaderAt) (int, error) {
	if cap(fw.pending)-len(fw.pending) < readChunk {
		grown := make([]byte, len(fw.pending), len(fw.pending)+readChunk)
		copy(grown, fw.pending)
		fw.pending = grown
	}
	space := fw.pending[len(fw.pending) : len(fw.pending)+readChunk]
	n, err := src.ReadAt(space, fw.readPos)
	if n > 0 {
		// Lines read before a failure are still consumed: a damaged .gz
		// publishes everything before the damage.
		fw.metrics.bytes.Add(float64(n))
		fw.readPos += int64(n)
		fw.pending = fw.pending[:len(fw.pending)+n]
		if err := fw.consumePending(ctx); err != nil {
			return n, err
		}
	}
	if err != nil && err != io.EOF {
		return n, &readError{off: fw.readPos, err: err}
	}
	return n, nil
}

func (fw *follower) consumePending(ctx context.Context) error {
	full := fw.cfg.BatchBytes - fw.cfg.MaxLineBytes - 1024
	start := 0
	for {
		i := bytes.IndexByte(fw.pending[start:], '\n')
		if i < 0 {
			break
		}
		if fw.skipping {
			fw.skipping = false
		} else {
			fw.consume(fw.pending[start:start+i], fw.offset)
		}
		fw.offset += int64(i + 1)
		start += i + 1
		if fw.batch.lines >= fw.cfg.BatchLines || fw.batch.enc.Size() >= full {
			// Sent while the next batch is read: the caller settles it.
			if err := fw.send(ctx); err != nil {
				return err
			}
		}
	}
	rest := copy(fw.pending, fw.pending[start:])
	fw.pending = fw.pending[:rest]
	if len(fw.pending) > fw.cfg.MaxLineBytes {
		// Drop the over-long line's bytes as they come, so one bad line
		// never stalls the file or grows memory.
		if !fw.skipping {
			fw.skipping = true
			fw.batch.tooLong()
			fw.linesRead++
			fw.logger.Warn("line too long; skipped", "offset", fw.offset, "max_line_bytes", fw.cfg.MaxLineBytes)
		}
		fw.offset += int64(len(fw.pending))
		fw.pending = fw.pending[:0]
	}
	return nil
}

// consume turns one line into a hit in the batch, or counts why not.
func (fw *follower) consume(line []byte, offset int64) {
	fw.linesRead++
	fw.batch.add(line, offset)
}
