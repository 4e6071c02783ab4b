package tail

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// errReopen asks run to open the input afresh: its file was deleted and
// closed, and whatever appears at the path next is a new file.
var errReopen = errors.New("file closed; reopen the path")

// checkRotation looks at the path after the file was read to its end. It
// reports whether the follower moved to another file or offset.
func (fw *follower) checkRotation(ctx context.Context) (bool, error) {
	same, exists := sameInode(fw.in.Path, fw.f)
	switch {
	case exists && !same:
		// A successor appeared (logrotate's create), but the server keeps
		// writing the old file until it reopens its logs: drain the old one
		// until it has been quiet for rotate_grace.
		if fw.rotatedAt.IsZero() {
			fw.rotatedAt = time.Now()
			fw.logger.Info("successor file appeared; draining the rotated file first", "rotate_grace", fw.cfg.RotateGrace)
		}
		if time.Since(fw.rotatedAt) < fw.cfg.RotateGrace || time.Since(fw.lastData) < fw.cfg.RotateGrace {
			return false, nil
		}
		fw.rotatedAt = time.Time{}
		return true, fw.switchFile(ctx)
	case !exists:
		// Renamed with no successor yet: the writer may still be appending
		// and the file still exists, so keep the handle. Deleted: once it
		// is quiet, let it go, or its disk space is never freed.
		gone, err := unlinked(fw.f)
		if err != nil || !gone || time.Since(fw.lastData) < fw.cfg.RotateGrace {
			return false, err
		}
		return false, fw.closeDeleted(ctx)
	}
	st, err := fw.f.Stat()
	if err != nil {
		return false, fmt.Errorf("stat: %w", err)
	}
	truncated := st.Size() < fw.readPos
	if !truncated && fw.id.fpLen > 0 {
		// Truncated and written again past our offset between two polls:
		// the size does not show it, the head does.
		h, err := headHash(fw.f, fw.id.fpLen)
		if err != nil {
			return false, err
		}
		truncated = h != fw.id.fp
	}
	if !truncated {
		return false, nil
	}
	fw.metrics.rotations.WithLabelValues("truncate").Inc()
	fw.logger.Info("file truncated; reading it from the beginning", "old_offset", fw.offset)
	if fw.id, err = identify(fw.f); err != nil {
		return false, err
	}
	fw.offset, fw.readPos, fw.batchStart = 0, 0, 0
	fw.pending, fw.skipping = fw.pending[:0], false
	return true, nil
}

// unlinked reports whether an open file has no name left in any directory.
func unlinked(f *os.File) (bool, error) {
	st, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("stat: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && sys.Nlink == 0, nil
}

// closeDeleted finishes a deleted file, records in the stream that it is
// complete (so a restart neither looks for it nor warns that its end was
// lost) and closes it.
func (fw *follower) closeDeleted(ctx context.Context) error {
	if err := fw.finish(ctx, fw.f); err != nil {
		return err
	}
	if err := fw.publishEOF(ctx); err != nil {
		return err
	}
	fw.metrics.rotations.WithLabelValues("delete").Inc()
	fw.logger.Info("file deleted; closed it, waiting for the path to appear again", "offset", fw.offset)
	return errReopen
}

// switchFile finishes the rotated-away file and opens its successor.
func (fw *follower) switchFile(ctx context.Context) error {
	if err := fw.finish(ctx, fw.f); err != nil {
		return err
	}
	if fw.batch.lines > 0 {
		if err := fw.publish(ctx); err != nil {
			return err
		}
	}
	next, err := os.Open(fw.in.Path)
	if err != nil {
		return fmt.Errorf("open successor: %w", err)
	}
	fw.f.Close()
	fw.f = next
	if fw.id, err = identify(next); err != nil {
		return err
	}
	fw.setCurrent()
	fw.metrics.rotations.WithLabelValues("rename").Inc()
	fw.logger.Info("file rotated; following its successor", "file_id", fw.id.String())
	fw.offset, fw.readPos, fw.batchStart = 0, 0, 0
	fw.pending, fw.skipping = fw.pending[:0], false
	return nil
}

// finish reads src to its end and consumes its last line, newline or not:
// nothing will be written to it any more. The batches read before the
// last one are stored when it returns.
func (fw *follower) finish(ctx context.Context, src io.ReaderAt) error {
	for {
		n, err := fw.readLines(ctx, src)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	fw.consumeLastLine()
	return fw.settle(ctx)
}

// consumeLastLine takes the bytes after a complete file's last newline as
// its last line. The rest of an over-long line is dropped instead, but its
// bytes are still passed over, so the file's end offset is its size.
func (fw *follower) consumeLastLine() {
	if len(fw.pending) > 0 {
		if !fw.skipping {
			fw.consume(fw.pending, fw.offset)
		}
		fw.offset += int64(len(fw.pending))
		fw.pending = fw.pending[:0]
	}
	fw.skipping = false
}
