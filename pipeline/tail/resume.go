package tail

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// open finds the file's position in the stream and opens the file there,
// waiting for the file to exist. When the stream's file is no longer at
// the path (rotated while ingest was stopped), it first reads the rest of
// that file from among the path's rotated siblings.
func (fw *follower) open(ctx context.Context) error {
	pos, err := retrying(ctx, fw.logger, "read position", func() (*savedPosition, error) { return fw.live.pos.last(ctx) })
	if err != nil {
		return err
	}
	fw.live.pos.resume(pos)
	// Whatever a previous attempt had read but not published is read again.
	rd := &fw.live.rd
	rd.pending, rd.skipping = rd.pending[:0], false
	rd.batch.reset()
	fw.rotatedAt = time.Time{}
	f, err := os.Open(fw.in.Path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("open: %w", err)
	}
	// The identity the file is followed with is the one the checks below
	// were made on: with copytruncate the file can be truncated at any
	// moment, and identified again later it would be another generation.
	var live identity
	same := false
	if f != nil {
		var head []byte
		if live, head, err = identifyHead(f); err != nil {
			f.Close()
			return err
		}
		same = pos != nil && sameGeneration(live, head, pos.id)
	}
	lost := false
	if pos != nil && !same && !pos.eof {
		found, now, err := fw.recoverRotated(ctx, pos, f, live)
		if err != nil {
			if f != nil {
				f.Close()
			}
			return err
		}
		live, lost = now, !found
	}
	appeared := false
	if f == nil {
		if err := fw.bf.noteCaughtUp(); err != nil {
			// Nothing to catch up with: the backfill of this input is over.
			return err
		}
		if f, err = fw.waitForFile(ctx); err != nil {
			return err
		}
		appeared = true
		// A missing file that comes back may be the one we were reading
		// (a directory mounted late, a file moved away and back).
		var head []byte
		if live, head, err = identifyHead(f); err != nil {
			f.Close()
			return err
		}
		same = pos != nil && sameGeneration(live, head, pos.id)
	}
	rd.f, rd.id = f, live
	fw.setCurrent()
	size, err := f.Seek(0, io.SeekEnd)
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
	case appeared || fw.fromStart || fw.env.cfg.StartAt == "beginning" || fw.bf != nil:
		start = 0
	default:
		start, marker = size, true
	}
	rd.startAt(start)
	fw.logger.Log(ctx, fw.bf.logLevel(), "following", "offset", start, "file_id", rd.id.String(), "stream_seq", fw.live.pos.lastSeq)
	if fw.bf.catchingUp() {
		fw.live.meter.setFile(fw.in.Path)
		fw.live.meter.addTotal(size - start)
	}
	if marker {
		// Record where we start, so a restart before the first new line
		// resumes here rather than at the (by then later) end.
		return fw.live.publish(ctx)
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
		if fw.glob && time.Since(since) > fw.env.files.linger {
			return nil, errGone
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(fw.env.cfg.PollInterval):
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
