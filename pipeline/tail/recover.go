package tail

import (
	"context"
	"os"
	"time"
)

// recoverRotated reads the rest of the file a saved position is in, when
// that file is no longer at the path: logrotate ran while ingest was
// stopped. f is the file at the path now (nil: none) and live its
// identity. See catchUp, which returns f's identity to follow it with.
func (fw *follower) recoverRotated(ctx context.Context, pos *savedPosition, f *os.File, live identity) (found bool, now identity, err error) {
	return fw.catchUp(ctx, pos.id, pos.end, f, live, true)
}

// catchUp publishes what logrotate moved out of the path since the
// input's subject last published the file old, up to from. The file is
// looked for among the path's rotated siblings, by inode and head or,
// once compressed or copied, by its (decompressed) head. Its rest is
// published on the input's own subject with the file's identity, so the
// subject's byte ranges stay contiguous; siblings rotated after it, which
// this input never read, are then published on subjects of their own, as
// a backfill would. found is false when no sibling holds the file.
//
// f is the file at the path (nil: none), live its identity before the
// siblings were listed. With copytruncate (f is old's inode, truncated in
// place) f is truncated at every rotation, so also while the copies are
// read: the generation it held then is one more copy, rotated after
// those read, and it was not among the siblings listed (list leaves out
// a copy with the live file's head: a copy being made). Reading f from
// its start then would skip that whole generation. So the siblings are
// looked at again until f still holds what it held before the look;
// now is f's identity from that last check, taken with the check, so no
// truncation can come between the two.
func (fw *follower) catchUp(ctx context.Context, old identity, from int64, f *os.File, live identity, restart bool) (found bool, now identity, err error) {
	// A file truncated in place (copytruncate) has its lines in copies,
	// which nothing writes once made: none is waited on for rotate_grace,
	// or rotations faster than the grace would outrun the tailer. A
	// renamed file may still be written until the server reopens its logs.
	inPlace := f != nil && oneInode(live, old)
	grace := fw.env.cfg.RotateGrace
	if inPlace {
		grace = 0
	}
	anchor, now := old, live // anchor: the newest sibling published
	for first := true; ; first = false {
		sibs, err := fw.rotated.list()
		if err != nil {
			fw.logger.Warn("cannot look for the rotated file among its siblings", "err", err)
			return found, now, nil
		}
		i := findSibling(sibs, anchor)
		if i < 0 {
			// Not found first: the caller says the rest of old is lost.
			// Later: the sibling just published is gone already.
			return found, now, nil
		}
		if first {
			found = true
			if err := fw.readRest(ctx, sibs[i], old, from, grace, restart); err != nil {
				return true, now, err
			}
		}
		newer := sibs[i+1:]
		tasks, err := fw.rotated.plan(ctx, newer, sibs[i])
		if err != nil {
			return true, now, err
		}
		if err := fw.rotated.copy(ctx, tasks, fw.bf.logLevel(), grace); err != nil {
			return true, now, err
		}
		for _, s := range newer {
			if len(s.head) > 0 { // an empty head cannot be found again
				anchor = s.identity()
			}
		}
		if f == nil {
			return true, now, nil
		}
		cur, head, err := identifyHead(f)
		if err != nil || !inPlace {
			// A renamed file's successor is followed as it is now, as
			// before: it is looked at for rotation once read.
			return true, cur, err
		}
		// An empty file proves nothing by its head: once copies took
		// time, look once more for a copy of what it may have held.
		if sameGeneration(cur, head, now) && (now.fpLen > 0 || len(tasks) == 0 && !first) {
			return true, cur, nil
		}
		if !sameGeneration(cur, head, now) {
			fw.logger.Info("file truncated again while its rotated copies were read; reading the copy of what it held", "file_id", now.String())
		}
		now = cur
	}
}

// readRest publishes s, the sibling holding the file old, from from to
// its end, on the input's subject.
func (fw *follower) readRest(ctx context.Context, s *sibling, old identity, from int64, grace time.Duration, restart bool) error {
	id := s.identity()
	if s.match(old) == byContent {
		// The same file under another inode: keep the inode it was
		// published with, so a restart halfway through finds it again the
		// same way and the subject reads as one file.
		id.dev, id.ino = old.dev, old.ino
	}
	if restart {
		fw.logger.Log(ctx, fw.bf.logLevel(), "file was rotated while ingest was stopped; reading the rest of it", "rotated", s.path, "offset", from)
		fw.env.metrics.rotations.WithLabelValues("rename").Inc()
	}
	rd := &fw.live.rd
	rd.id = id
	rd.startAt(from)
	fw.live.meter.addTotal(s.toRead(from))
	return fw.live.copyRotated(ctx, s, fw.rotated.open, false, grace, fw.env.cfg.PollInterval)
}

// toRead is how many bytes reading s from start takes from the disk: a
// .gz is decompressed from its beginning whatever the start.
func (s *sibling) toRead(start int64) int64 {
	if s.gz {
		return s.size
	}
	return max(s.size-start, 0)
}
