package tail

import (
	"context"
	"errors"
	"time"
)

// recoverRotated reads the rest of the file a saved position is in, when
// that file is no longer at the path: logrotate ran while ingest was
// stopped. The file is looked for among the path's rotated siblings, by
// inode and head or, once compressed, by its decompressed head. Its rest
// is published on the input's own subject with the file's identity, so
// the subject's byte ranges stay contiguous; siblings rotated after it,
// which this input never read, are then published on subjects of their
// own, as a backfill would. found is false when no sibling holds the file.
func (fw *follower) recoverRotated(ctx context.Context, pos *position) (found bool, err error) {
	sibs, err := fw.siblings()
	if err != nil {
		fw.logger.Warn("cannot look for the rotated file among its siblings", "err", err)
		return false, nil
	}
	i := findSibling(sibs, pos.id)
	if i < 0 {
		return false, nil
	}
	s := sibs[i]
	id := s.identity()
	if s.match(pos.id) == byContent {
		// The same file under another inode: keep the inode it was
		// published with, so a restart halfway through finds it again the
		// same way and the subject reads as one file.
		id.dev, id.ino = pos.id.dev, pos.id.ino
	}
	fw.logger.Log(ctx, fw.logLevel(), "file was rotated while ingest was stopped; reading the rest of it", "rotated", s.path, "offset", pos.end)
	fw.metrics.rotations.WithLabelValues("rename").Inc()
	fw.id = id
	fw.offset, fw.readPos, fw.batchStart = pos.end, pos.end, pos.end
	fw.meter.addTotal(s.toRead(pos.end))
	if err := fw.readFinished(ctx, s, false); err != nil {
		return true, err
	}
	tasks, err := fw.planSiblings(ctx, sibs[i+1:], s)
	if err != nil {
		return true, err
	}
	return true, fw.runTasks(ctx, tasks)
}

// toRead is how many bytes reading s from start takes from the disk: a
// .gz is decompressed from its beginning whatever the start.
func (s *sibling) toRead(start int64) int64 {
	if s.gz {
		return s.size
	}
	return max(s.size-start, 0)
}

// readFinished reads a rotated file's content from fw.offset to its end
// and publishes it, its last line too, newline or not. A plain file
// modified less than rotate_grace ago may still be written by a server
// that has not reopened its logs: it is read until quiet that long. eof
// marks the last message as the file's end, so a later backfill skips it
// without opening it.
func (fw *follower) readFinished(ctx context.Context, s *sibling, eof bool) error {
	c, err := s.open()
	if err != nil {
		return err
	}
	defer c.Close()
	if !s.gz {
		if st, err := c.f.Stat(); err == nil && st.Size() < fw.offset {
			fw.logger.Warn("rotated file is shorter than its saved position; skipped", "rotated", s.path, "size", st.Size(), "offset", fw.offset)
			return nil
		}
	}
	fw.finished = true
	defer func() { fw.finished = false }()
	fw.meter.setFile(s.path)
	// What the progress total counted: a .gz whole, a plain file from
	// where reading starts.
	disk := fw.readPos
	if s.gz {
		disk = 0
	}
	for {
		linesBefore := fw.linesRead
		n, err := fw.readLines(ctx, c)
		now := c.diskBytes(fw.readPos)
		fw.meter.add(now-disk, fw.linesRead-linesBefore)
		disk = now
		var rerr *readError
		switch {
		case errors.Is(err, errShorter):
			fw.logger.Warn("rotated file is shorter than its saved position; skipped", "rotated", s.path, "offset", fw.offset)
			return nil
		case s.gz && errors.As(err, &rerr):
			// Damaged, or still being written by gzip: publish the lines
			// before the damage, without marking the end, so a later run
			// can try again from there.
			fw.logger.Warn("compressed rotated file is damaged or incomplete; published the lines before the damage", "rotated", s.path, "offset", fw.offset, "err", err)
			if fw.batch.lines == 0 {
				return nil
			}
			return fw.publish(ctx)
		case err != nil:
			return err
		case n > 0:
			continue
		}
		if !s.gz {
			if st, err := c.f.Stat(); err == nil && time.Since(st.ModTime()) < fw.cfg.RotateGrace {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(fw.cfg.PollInterval):
				}
				continue
			}
		}
		break
	}
	linesBefore := fw.linesRead
	fw.consumeLastLine()
	fw.meter.add(0, fw.linesRead-linesBefore)
	if eof {
		return fw.publishEOF(ctx)
	}
	if fw.batch.lines > 0 || fw.offset > fw.batchStart {
		return fw.publish(ctx)
	}
	return fw.settle(ctx)
}
