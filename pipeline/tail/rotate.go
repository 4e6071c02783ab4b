package tail

import (
	"context"
	"errors"
	"fmt"
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
	ch, err := fw.live.rd.look(fw.in.Path)
	if err != nil {
		return false, err
	}
	grace := fw.env.cfg.RotateGrace
	switch ch {
	case successor:
		// The server keeps writing the old file until it reopens its
		// logs: drain the old one until it has been quiet for grace.
		if fw.rotatedAt.IsZero() {
			fw.rotatedAt = time.Now()
			fw.logger.Info("successor file appeared; draining the rotated file first", "rotate_grace", grace)
		}
		if time.Since(fw.rotatedAt) < grace || time.Since(fw.lastData) < grace {
			return false, nil
		}
		fw.rotatedAt = time.Time{}
		return true, fw.switchFile(ctx)
	case deleted:
		// Once it is quiet, let it go, or its disk space is never freed.
		if time.Since(fw.lastData) < grace {
			return false, nil
		}
		return false, fw.closeDeleted(ctx)
	case truncated:
		return true, fw.restartTruncated()
	}
	// Renamed with no successor yet: the writer may still be appending
	// and the file still exists, so keep the handle.
	return false, nil
}

// restartTruncated reads the live file again from its start.
func (fw *follower) restartTruncated() error {
	rd := &fw.live.rd
	fw.env.metrics.rotations.WithLabelValues("truncate").Inc()
	fw.logger.Info("file truncated; reading it from the beginning", "old_offset", rd.offset)
	if err := rd.use(rd.f); err != nil {
		return err
	}
	rd.startAt(0)
	return nil
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
	if err := fw.live.finish(ctx, fw.live.rd.f); err != nil {
		return err
	}
	if err := fw.live.publishEOF(ctx); err != nil {
		return err
	}
	fw.env.metrics.rotations.WithLabelValues("delete").Inc()
	fw.logger.Info("file deleted; closed it, waiting for the path to appear again", "offset", fw.live.rd.offset)
	return errReopen
}

// switchFile finishes the rotated-away file and opens its successor.
func (fw *follower) switchFile(ctx context.Context) error {
	rd := &fw.live.rd
	if err := fw.live.finish(ctx, rd.f); err != nil {
		return err
	}
	if rd.batch.lines > 0 {
		if err := fw.live.publish(ctx); err != nil {
			return err
		}
	}
	next, err := os.Open(fw.in.Path)
	if err != nil {
		return fmt.Errorf("open successor: %w", err)
	}
	rd.close()
	if err := rd.use(next); err != nil {
		return err
	}
	fw.setCurrent()
	fw.env.metrics.rotations.WithLabelValues("rename").Inc()
	fw.logger.Info("file rotated; following its successor", "file_id", rd.id.String())
	rd.startAt(0)
	return nil
}
