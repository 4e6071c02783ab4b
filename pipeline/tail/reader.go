package tail

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const readChunk = 256 << 10

// reader is the bottom layer of a file's follower: the file it has open
// and that file's identity, the lines it splits out of what it reads into
// a batch of hits, and what it sees of the path (a successor, the file
// deleted or truncated). It publishes nothing: a full batch goes to full,
// which the pipe above it sets.
type reader struct {
	limits readLimits
	logger *slog.Logger
	bytes  prometheus.Counter

	f        *os.File // the live file; nil while reading a rotated sibling's content
	id       identity
	finished bool // reading a complete rotated file: its identity is fixed (see ident)

	offset     int64  // end of the last line consumed
	readPos    int64  // end of the bytes read into pending
	pending    []byte // bytes read past offset: at most one incomplete line
	skipping   bool   // inside a line longer than MaxLineBytes
	batchStart int64  // where the lines of batch start
	batch      hitBatch
	linesRead  int64 // lines consumed since the follower started, for progress

	// full is called, between two lines, when batch has filled: the pipe
	// sends it (it may still be in flight when full returns).
	full func(ctx context.Context) error
}

// readLimits are the batch and line sizes of Config.
type readLimits struct {
	batchLines, batchBytes, maxLineBytes int
}

func limitsOf(cfg Config) readLimits {
	return readLimits{batchLines: cfg.BatchLines, batchBytes: cfg.BatchBytes, maxLineBytes: cfg.MaxLineBytes}
}

// readError is a failed read of the file, as opposed to a failed publish.
type readError struct {
	off int64
	err error
}

func (e *readError) Error() string { return fmt.Sprintf("read at %d: %v", e.off, e.err) }
func (e *readError) Unwrap() error { return e.err }

// startAt makes the next line read start at off, forgetting whatever was
// read and not consumed: it is read again.
func (r *reader) startAt(off int64) {
	r.offset, r.readPos, r.batchStart = off, off, off
	r.pending, r.skipping = r.pending[:0], false
}

// use makes f the file read, taking its identity now.
func (r *reader) use(f *os.File) error {
	r.f = f
	id, err := identify(f)
	if err != nil {
		return err
	}
	r.id = id
	return nil
}

// close closes the live file, if open.
func (r *reader) close() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
}

// ident is the identity a message of the batch carries. A growing file's
// head is hashed again until it is fingerprintLen long, so a restart can
// tell it from a file that replaced it; a finished file's identity was
// taken whole when it was opened (from the decompressed head for .gz,
// whose own inode and bytes are not the ones the identity describes).
func (r *reader) ident() (identity, error) {
	if !r.finished && r.id.fpLen < fingerprintLen && r.f != nil {
		id, err := identify(r.f)
		if err != nil {
			return identity{}, err
		}
		r.id = id
	}
	return r.id, nil
}

// read reads what src has past readPos and consumes its complete lines,
// handing each batch to full as it fills. It returns the bytes read.
func (r *reader) read(ctx context.Context, src io.ReaderAt) (int, error) {
	if cap(r.pending)-len(r.pending) < readChunk {
		grown := make([]byte, len(r.pending), len(r.pending)+readChunk)
		copy(grown, r.pending)
		r.pending = grown
	}
	space := r.pending[len(r.pending) : len(r.pending)+readChunk]
	n, err := src.ReadAt(space, r.readPos)
	if n > 0 {
		// Lines read before a failure are still consumed: a damaged .gz
		// publishes everything before the damage.
		r.bytes.Add(float64(n))
		r.readPos += int64(n)
		r.pending = r.pending[:len(r.pending)+n]
		if err := r.consumePending(ctx); err != nil {
			return n, err
		}
	}
	if err != nil && err != io.EOF {
		return n, &readError{off: r.readPos, err: err}
	}
	return n, nil
}

func (r *reader) consumePending(ctx context.Context) error {
	full := r.limits.batchBytes - r.limits.maxLineBytes - 1024
	start := 0
	for {
		i := bytes.IndexByte(r.pending[start:], '\n')
		if i < 0 {
			break
		}
		switch {
		case r.skipping:
			r.skipping = false
		case i > r.limits.maxLineBytes:
			// Whole in one read or not, a line past the limit is skipped.
			r.skipLong()
		default:
			r.linesRead++
			r.batch.add(r.pending[start:start+i], r.offset)
		}
		r.offset += int64(i + 1)
		start += i + 1
		if r.batch.lines >= r.limits.batchLines || r.batch.enc.Size() >= full {
			// Sent while the next batch is read: the pipe settles it.
			if err := r.full(ctx); err != nil {
				return err
			}
		}
	}
	rest := copy(r.pending, r.pending[start:])
	r.pending = r.pending[:rest]
	if len(r.pending) > r.limits.maxLineBytes {
		// Drop the over-long line's bytes as they come, so one bad line
		// never stalls the file or grows memory.
		if !r.skipping {
			r.skipping = true
			r.skipLong()
		}
		r.offset += int64(len(r.pending))
		r.pending = r.pending[:0]
	}
	return nil
}

// skipLong counts and logs a line past max_line_bytes, at r.offset.
func (r *reader) skipLong() {
	r.batch.tooLong()
	r.linesRead++
	r.logger.Warn("line too long; skipped", "offset", r.offset, "max_line_bytes", r.limits.maxLineBytes)
}

// consumeLastLine takes the bytes after a complete file's last newline as
// its last line. The rest of an over-long line is dropped instead, but its
// bytes are still passed over, so the file's end offset is its size.
func (r *reader) consumeLastLine() {
	if len(r.pending) > 0 {
		switch {
		case r.skipping:
		case len(r.pending) > r.limits.maxLineBytes:
			r.skipLong()
		default:
			r.linesRead++
			r.batch.add(r.pending, r.offset)
		}
		r.offset += int64(len(r.pending))
		r.pending = r.pending[:0]
	}
	r.skipping = false
}

// change is what the path shows about the file being read, once it has
// been read to its end.
type change int

const (
	unchanged change = iota
	// successor: another file is at the path (logrotate's create); the
	// server may still write the old one until it reopens its logs.
	successor
	// renamedAway: no file at the path, ours still has a name (or is held
	// open by the writer): keep reading it.
	renamedAway
	// deleted: no file at the path and ours has no name left.
	deleted
	// truncated: our file is shorter than what we read, or its head
	// changed (truncated and written again past our offset between two
	// looks).
	truncated
)

// look tells how the path relates to the open file.
func (r *reader) look(path string) (change, error) {
	same, exists := sameInode(path, r.f)
	switch {
	case exists && !same:
		return successor, nil
	case !exists:
		gone, err := unlinked(r.f)
		if err != nil || !gone {
			return renamedAway, err
		}
		return deleted, nil
	}
	st, err := r.f.Stat()
	if err != nil {
		return unchanged, fmt.Errorf("stat: %w", err)
	}
	if st.Size() < r.readPos {
		return truncated, nil
	}
	if r.id.fpLen > 0 {
		h, err := headHash(r.f, r.id.fpLen)
		if err != nil {
			return unchanged, err
		}
		if h != r.id.fp {
			return truncated, nil
		}
	}
	return unchanged, nil
}

// lag is how far the file's size is past published, for the metrics.
func (r *reader) lag(published int64) (int64, bool) {
	if r.f == nil {
		return 0, false
	}
	st, err := r.f.Stat()
	if err != nil {
		return 0, false
	}
	return st.Size() - published, true
}

// modifiedWithin reports whether c, a plain rotated file, changed less
// than d ago: a server that has not reopened its logs may still write it.
func modifiedWithin(c *content, d time.Duration) bool {
	if c.disk != nil {
		return false
	}
	st, err := c.f.Stat()
	return err == nil && time.Since(st.ModTime()) < d
}
