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
		return true, fw.followTruncation(ctx)
	}
	// Renamed with no successor yet: the writer may still be appending
	// and the file still exists, so keep the handle.
	return false, nil
}

// copyBetween publishes the files rotated after the one just finished
// (done) and before the one now at the path: with rotations more often
// than rotate_grace, several generations come and go while done is
// drained, and none of them was ever at the path when it was looked at.
// Each goes on a subject of its own, as a backfill's would, so a restart
// halfway through resumes each where it stopped.
func (fw *follower) copyBetween(ctx context.Context, done identity) error {
	sibs, err := fw.rotated.list()
	if err != nil {
		fw.logger.Warn("cannot list the rotated files; files rotated while the previous one was drained are not read", "err", err)
		return nil
	}
	i := findSibling(sibs, done)
	if i < 0 || i == len(sibs)-1 {
		return nil
	}
	tasks, err := fw.rotated.plan(ctx, sibs[i+1:], sibs[i])
	if err != nil {
		return err
	}
	return fw.rotated.copy(ctx, tasks, fw.bf.logLevel(), fw.env.cfg.RotateGrace)
}

// followTruncation goes on after the live file was truncated. With
// copytruncate, logrotate copied the file before truncating it, so the
// lines the server wrote before the copy that were not read yet are in
// the copy: it is found among the siblings by the old head, as after a
// restart, and read from the old offset to its end on the file's
// subject, under the old identity. The copy is complete when it is found
// (logrotate copies before it truncates), so it is not waited on for
// rotate_grace: the live file may be truncated again meanwhile. Copies
// rotated after it, when the file was truncated more than once since it
// was last looked at, are read too (catchUp). Then the truncated file is
// read from its start. Only what the server wrote between the copy and
// the truncate is in neither file.
func (fw *follower) followTruncation(ctx context.Context) error {
	rd := &fw.live.rd
	fw.env.metrics.rotations.WithLabelValues("truncate").Inc()
	old, from := rd.id, rd.offset
	live := rd.f
	cur, err := identify(live)
	if err != nil {
		return err
	}
	// The copies are read under identities of their own: the reader must
	// not take the live file's head for theirs meanwhile (ident).
	rd.f = nil
	found, cur, err := fw.catchUp(ctx, old, from, live, cur, false)
	rd.f = live
	if err != nil {
		return err
	}
	if found {
		fw.logger.Info("file truncated; read the rest of its copy, now reading it from the beginning", "old_offset", from, "copy_end", rd.offset)
	} else {
		fw.logger.Warn("file truncated and no copy of it among its rotated siblings; lines written after the offset read are lost, reading it from the beginning", "old_offset", from)
	}
	rd.id = cur
	fw.setCurrent()
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
	if err := fw.copyBetween(ctx, rd.id); err != nil {
		return err
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
