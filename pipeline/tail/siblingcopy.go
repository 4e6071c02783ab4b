package tail

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/pagewatch/pagewatch/broker/bus"
)

// rotatedFiles are an input's rotated siblings. Three paths publish them:
// a backfill (those the input never published), a restart after
// logrotate ran (the rest of the file the position is in, then those
// rotated after it: recover.go) and rotations faster than rotate_grace
// (the generations that came and went while the old file drained:
// rotate.go). So they are the follower's, backfill or not.
type rotatedFiles struct {
	env    *fileEnv
	in     Input
	logger *slog.Logger
	lease  *fileLease // its subject owner names the siblings' subjects
	// live is the input's own pipe: its subject records what the input
	// published, and a sibling's pipe shares its format, counters and
	// progress.
	live *pipe
}

// siblingTask is a rotated sibling to publish on a subject of its own.
type siblingTask struct {
	s       *sibling
	subject string
	start   int64  // in the content: decompressed bytes for a .gz
	lastSeq uint64 // of the last message on subject, 0 if none
}

// subject is where a sibling the input never published goes: a subject
// per file, so an interrupted backfill resumes at its own position. It
// is named by the file's first bytes, not its inode or name, so it is the
// same after the file is renamed (.1 → .2) or compressed, and by the
// instance and path of the file's subject (lease.go), so it is the same
// for every tailer that takes the file over.
func (r *rotatedFiles) subject(s *sibling) string {
	instance, path := r.lease.subjectOwner()
	return r.env.bus.HitsSubject(instance, bus.Key(path, "backfill", s.identity().contentKey()))
}

// plan decides where each sibling is to be read from: past the end
// recorded for it on its own subject, else past the furthest end
// recorded for it on the input's subject (a file followed live, then
// rotated), else from its start. A sibling whose own subject says it is
// complete, or a plain one already read to its size, is left out, and so
// is skip, which the caller reads itself.
func (r *rotatedFiles) plan(ctx context.Context, sibs []*sibling, skip *sibling) ([]siblingTask, error) {
	if len(sibs) == 0 {
		return nil, nil
	}
	recorded, err := retrying(ctx, r.logger, "scan published files", func() ([]recordedFile, error) { return r.live.pos.recordedFiles(ctx) })
	if err != nil {
		return nil, err
	}
	// One sibling per content: while gzip runs, a rotation exists as both
	// access.log.1 and a growing access.log.1.gz; the plain one is whole.
	best := map[string]*sibling{}
	for _, s := range sibs {
		k := s.identity().contentKey()
		if b, ok := best[k]; !ok || b.gz && !s.gz || b.gz == s.gz && s.size > b.size {
			best[k] = s
		}
	}
	var skipKey string
	if skip != nil {
		skipKey = skip.identity().contentKey()
	}
	var tasks []siblingTask
	for _, s := range sibs {
		k := s.identity().contentKey()
		if len(s.head) == 0 || best[k] != s || k == skipKey {
			continue // empty files hold no line
		}
		subject := r.subject(s)
		bpos, err := retrying(ctx, r.logger, "read backfill position", func() (*savedPosition, error) { return r.live.pos.on(ctx, subject) })
		if err != nil {
			return nil, err
		}
		t := siblingTask{s: s, subject: subject}
		switch {
		case bpos != nil && bpos.eof:
			continue
		case bpos != nil && !headMatches(s.head, bpos.id):
			r.logger.Warn("backfill subject holds another file; skipped", "rotated", s.path, "subject", subject)
			continue
		case bpos != nil:
			t.start, t.lastSeq = bpos.end, bpos.seq
		default:
			for _, rec := range recorded {
				if s.match(rec.id) != noMatch {
					t.start = max(t.start, rec.end)
				}
			}
		}
		if !s.gz && t.start >= s.size {
			continue
		}
		r.live.meter.addTotal(s.toRead(t.start))
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// copy publishes each planned sibling on its subject, from its start to
// its end. level is the follower's for a per-file line (lower while a
// backfill draws on a terminal). A plain sibling modified less than grace
// ago is read until quiet that long (see copyRotated): 0 for copies,
// which nothing writes once made.
func (r *rotatedFiles) copy(ctx context.Context, tasks []siblingTask, level slog.Level, grace time.Duration) error {
	for _, t := range tasks {
		for {
			p := r.pipeFor(t.subject)
			p.pos.lastSeq, p.rd.id = t.lastSeq, t.s.identity()
			p.rd.startAt(t.start)
			r.logger.Log(ctx, level, "backfilling rotated file", "rotated", t.s.path, "offset", t.start)
			err := p.copyRotated(ctx, t.s, r.open, true, grace, r.env.cfg.PollInterval)
			if !errors.Is(err, errResync) {
				if err != nil {
					return err
				}
				break
			}
			// Someone else published on the subject: go on from there.
			pos, err := retrying(ctx, r.logger, "read backfill position", func() (*savedPosition, error) { return r.live.pos.on(ctx, t.subject) })
			if err != nil {
				return err
			}
			t.start, t.lastSeq = 0, 0
			if pos != nil {
				if pos.eof {
					break
				}
				t.start, t.lastSeq = pos.end, pos.seq
			}
		}
	}
	return nil
}

// pipeFor is a pipe that publishes a sibling on subject, sharing the
// input's format, counters and progress.
func (r *rotatedFiles) pipeFor(subject string) *pipe {
	batch := newHitBatch(r.live.rd.batch.parser, r.in.Site, r.env.rules, r.env.metrics, r.logger)
	p := newPipe(r.env, r.in, subject, batch, r.logger)
	p.meter = r.live.meter
	p.pos.source = r.live.pos.source
	return p
}
