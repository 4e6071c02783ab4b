package tail

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
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
	// HeaderSource is the host and real path of the input a file message
	// comes from (the file's lease key): with the file's head hash and a
	// line's offset, the line's event id (hit.Keys).
	HeaderSource = hit.HeaderSource
)

// errResync means the stream holds a position other than ours: the
// follower must reopen its file at the stream's position.
var errResync = errors.New("position in stream moved")

// errBackfillDone stops a follower of `--backfill-only` once its file has
// been read to the end.
var errBackfillDone = errors.New("backfill done")

// errGone ends the follower of a glob's file: the file is gone and its
// path has stayed empty.
var errGone = errors.New("file gone")

// follower tails one file. It is the driver over the file's layers: the
// lease (fileLease) keeps it the file's only publisher, the live pipe
// reads the file (reader) and moves its position on the subject
// (position), rotatedFiles copies rotated siblings through pipes of their
// own, and the backfill (inputBackfill) has it copy those never
// published first. What it keeps itself is when things happened.
type follower struct {
	env    *fileEnv
	in     Input
	logger *slog.Logger
	state  *fileState // lag and age of the input, for the metrics

	// key is the absolute path the follower is known by in its Run. A
	// glob's file (glob) ends once gone (errGone); one that appeared
	// while ingest ran (fromStart) is read from its beginning.
	key       string
	glob      bool
	fromStart bool
	current   atomic.Pointer[fileKey] // the file read now, for other goroutines

	lease   *fileLease
	live    *pipe // the file at the path, on the input's subject
	rotated *rotatedFiles

	keepalive time.Duration // re-publish the position of a quiet file this often
	lastData  time.Time     // when the file last had new bytes
	rotatedAt time.Time     // when a successor appeared at the path; zero if none

	bf *inputBackfill // nil without --from-start
}

// fileKey is a file's device and inode.
type fileKey struct{ dev, ino uint64 }

func (t *Tailer) newFollower(in Input, p logformat.Parser, state *fileState) *follower {
	return t.makeFollower(in, p, state, false)
}

func (t *Tailer) newGlobFollower(in Input, p logformat.Parser, state *fileState) *follower {
	return t.makeFollower(in, p, state, true)
}

func (t *Tailer) makeFollower(in Input, p logformat.Parser, state *fileState, glob bool) *follower {
	logger := t.logger.With("file", in.Path)
	keepalive := t.bus.HitsMaxAge() / 4
	fw := &follower{
		env:       t.env,
		in:        in,
		logger:    logger,
		state:     state,
		glob:      glob,
		lease:     newFileLease(t.files, t.cfg, in.Path, glob, keepalive, logger),
		live:      newPipe(t.env, in, t.bus.HitsSubject(t.cfg.Instance, bus.Key(in.Path)), newHitBatch(p, in.Site, t.env.rules, t.metrics, logger), logger),
		keepalive: keepalive,
	}
	fw.live.pos.stored = fw.lease.refreshRecord
	fw.rotated = &rotatedFiles{env: t.env, in: in, logger: logger, lease: fw.lease, live: fw.live}
	fw.live.pos.source = fileLeaseKey(t.files.self.host, in.Path)
	return fw
}

// run follows the file while it holds the file's lease, standing by while
// another tailer of the host holds it, until ctx is done.
func (fw *follower) run(ctx context.Context) error {
	if !fw.lease.held() {
		return fw.work(ctx)
	}
	for {
		lctx, cancel := context.WithCancel(ctx)
		var lost atomic.Bool
		lease, err := fw.lease.acquire(ctx, func() {
			// Stop publishing at once: another tailer may have the file.
			lost.Store(true)
			cancel()
		}, fw.standby)
		if err != nil {
			cancel()
			if errors.Is(err, errBackfillDone) {
				return nil
			}
			return err
		}
		fw.state.setStandby(false)
		err = fw.resolveSubject(lctx)
		if err == nil {
			err = fw.work(lctx)
		}
		cancel()
		fw.lease.release(ctx, lease)
		if !lost.Load() || ctx.Err() != nil {
			return err
		}
		fw.env.files.fm.lost.Inc()
		fw.logger.Warn("lost the file's lease (NATS unreachable for lease_ttl, or taken by another tailer); stopped publishing, standing by")
		if fw.bf.leave() {
			return nil
		}
	}
}

// standby is called when another tailer holds the file: a backfill-only
// run gives the file up rather than wait.
func (fw *follower) standby(holder string) error {
	fw.state.setStandby(true)
	if fw.bf.leave() {
		fw.logger.Warn("file not backfilled: another tailer follows it", "holder", holder)
		return errBackfillDone
	}
	return nil
}

// resolveSubject publishes the live file on the subject its record
// names, which another instance may have started.
func (fw *follower) resolveSubject(ctx context.Context) error {
	rec, err := fw.lease.resolve(ctx)
	if err != nil {
		return err
	}
	fw.live.pos.subject = fw.env.bus.HitsSubject(rec.Instance, bus.Key(rec.Path))
	return nil
}

// work follows the file (run holds its lease meanwhile): the rotated
// siblings the backfill planned first, then the file, reopened whenever
// it is replaced.
func (fw *follower) work(ctx context.Context) error {
	if err := fw.bf.copyPlanned(ctx); err != nil {
		return err
	}
	for {
		err := fw.follow(ctx)
		fw.live.rd.close()
		fw.current.Store(nil)
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

// follow opens the file at its position and follows it: read what is
// new, publish it, look at the path, wait.
func (fw *follower) follow(ctx context.Context) error {
	if err := fw.open(ctx); err != nil {
		return err
	}
	for {
		n, err := fw.readNew(ctx)
		if err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		if err := fw.publishRead(ctx); err != nil {
			return err
		}
		if err := fw.bf.noteCaughtUp(); err != nil {
			return err
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
		case <-time.After(fw.env.cfg.PollInterval):
		}
	}
}

// readNew reads one chunk of what the file has past what was read, and
// updates the metrics: the file's lag behind its end, when its
// unpublished bytes were first seen, and a backfill's progress.
func (fw *follower) readNew(ctx context.Context) (int, error) {
	rd := &fw.live.rd
	linesBefore := rd.linesRead
	n, err := fw.live.read(ctx, rd.f)
	if err != nil {
		return n, err
	}
	if fw.bf.catchingUp() {
		fw.live.meter.add(int64(n), rd.linesRead-linesBefore)
	}
	if n > 0 {
		fw.state.unpublishedSeen(time.Now())
		fw.lastData = time.Now()
	}
	published := fw.live.published()
	if lag, ok := rd.lag(published); ok {
		fw.state.setLag(lag)
		fw.state.setPosition(published+lag, published, fw.live.pos.lastPublish, rd.linesRead)
	}
	return n, nil
}

// publishRead runs at the end of what the file has: the batch sent while
// reading is stored first, then what was read is published, unless
// inside an over-long line (a position must fall between lines). A quiet
// file re-publishes its position now and then, so it does not age out of
// the stream with the last batch.
func (fw *follower) publishRead(ctx context.Context) error {
	if err := fw.live.settle(ctx); err != nil {
		return err
	}
	rd := &fw.live.rd
	if !rd.skipping && (rd.batch.lines > 0 || time.Since(fw.live.pos.lastPublish) > fw.keepalive) {
		if err := fw.live.publish(ctx); err != nil {
			return err
		}
	}
	if rd.batch.lines == 0 {
		fw.state.allPublished()
	}
	return nil
}

// setCurrent records the file the follower reads now, for sameFileAs.
func (fw *follower) setCurrent() {
	fw.current.Store(&fileKey{dev: fw.live.rd.id.dev, ino: fw.live.rd.id.ino})
}
