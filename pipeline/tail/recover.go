package tail

import (
	"context"
)

// recoverRotated reads the rest of the file a saved position is in, when
// that file is no longer at the path: logrotate ran while ingest was
// stopped. The file is looked for among the path's rotated siblings, by
// inode and head or, once compressed, by its decompressed head. Its rest
// is published on the input's own subject with the file's identity, so
// the subject's byte ranges stay contiguous; siblings rotated after it,
// which this input never read, are then published on subjects of their
// own, as a backfill would. found is false when no sibling holds the file.
func (fw *follower) recoverRotated(ctx context.Context, pos *savedPosition) (found bool, err error) {
	sibs, err := fw.rotated.list()
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
	fw.logger.Log(ctx, fw.bf.logLevel(), "file was rotated while ingest was stopped; reading the rest of it", "rotated", s.path, "offset", pos.end)
	fw.env.metrics.rotations.WithLabelValues("rename").Inc()
	fw.live.rd.id = id
	fw.live.rd.startAt(pos.end)
	fw.live.meter.addTotal(s.toRead(pos.end))
	if err := fw.live.copyRotated(ctx, s, fw.rotated.open, false, fw.env.cfg.RotateGrace, fw.env.cfg.PollInterval); err != nil {
		return true, err
	}
	tasks, err := fw.rotated.plan(ctx, sibs[i+1:], s)
	if err != nil {
		return true, err
	}
	return true, fw.rotated.copy(ctx, tasks, fw.bf.logLevel())
}

// toRead is how many bytes reading s from start takes from the disk: a
// .gz is decompressed from its beginning whatever the start.
func (s *sibling) toRead(start int64) int64 {
	if s.gz {
		return s.size
	}
	return max(s.size-start, 0)
}
