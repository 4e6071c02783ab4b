package tail

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/term"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/progress"
)

// BackfillOptions configure `ingest tail --from-start`: before following
// its file, each input publishes the rotated siblings of that file that
// were never published (plain and .gz, oldest first), and its live file
// from the beginning when it has no position yet.
type BackfillOptions struct {
	// Progress receives the progress display (stderr); nil for none.
	Progress io.Writer
	// Terminal chooses the redrawn line or quiet log lines; the default
	// looks at whether Progress is a terminal.
	Terminal progress.TerminalMode
	// Only stops once every input has been read to its end, instead of
	// following the files on.
	Only bool
}

// backfillRun is one Run's backfill over all its inputs.
type backfillRun struct {
	opts    BackfillOptions
	display *progress.Display // nil without BackfillOptions.Progress
	left    atomic.Int64      // inputs not caught up yet
	logger  *slog.Logger
	// level is that of the per-file log lines while the backfill runs:
	// Debug under a redrawn terminal line, which a log line would break
	// in the middle (the line shows the file being read anyway).
	level slog.Level
}

// inputBackfill is one follower's part in a backfill.
type inputBackfill struct {
	run      *backfillRun
	tasks    []siblingTask // rotated siblings to publish before the live file
	caughtUp bool          // the live file has been read to its end once
}

// startBackfill plans every input's backfill before any is read, so the
// progress total is whole from the start, and runs the progress display
// until stop is called.
func (t *Tailer) startBackfill(ctx context.Context, fws []*follower) (stop func(), err error) {
	bf := &backfillRun{opts: *t.backfill, logger: t.logger}
	bf.left.Store(int64(len(fws)))
	if bf.opts.Progress != nil {
		bf.display = progress.New(bf.opts.Progress, progress.Options{Terminal: bf.opts.Terminal, Logger: t.logger})
		if onTerminal(bf.opts) {
			bf.level = slog.LevelDebug
		}
	}
	errs := make([]error, len(fws))
	var wg sync.WaitGroup
	for i, fw := range fws {
		fw.bf = &inputBackfill{run: bf}
		fw.live.meter = &meter{
			display: bf.display,
			bytes:   t.metrics.backfillBytes.WithLabelValues(fw.in.Path),
			lines:   t.metrics.backfillLines.WithLabelValues(fw.in.Path),
			total:   t.metrics.backfillTotal.WithLabelValues(fw.in.Path),
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fw.planBackfill(ctx)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	t.logger.Info("backfill planned", "rotated_files", countTasks(fws))
	if bf.display == nil {
		return func() {}, nil
	}
	dctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = bf.display.Run(dctx)
	}()
	return func() { cancel(); <-done }, nil
}

// onTerminal tells, as progress.New does, whether the display redraws a
// terminal line.
func onTerminal(o BackfillOptions) bool {
	switch o.Terminal {
	case progress.TerminalOn:
		return true
	case progress.TerminalAuto:
		f, ok := o.Progress.(*os.File)
		return ok && term.IsTerminal(int(f.Fd()))
	}
	return false
}

// logLevel is the level of a per-file Info line: lower while a backfill
// draws on a terminal.
func (fw *follower) logLevel() slog.Level {
	if fw.catchingUp() {
		return fw.bf.run.level
	}
	return slog.LevelInfo
}

func countTasks(fws []*follower) int {
	n := 0
	for _, fw := range fws {
		if fw.bf != nil {
			n += len(fw.bf.tasks)
		}
	}
	return n
}

// catchingUp reports whether a backfill is reading the live file for the
// first time.
func (fw *follower) catchingUp() bool { return fw.bf != nil && !fw.bf.caughtUp }

// noteCaughtUp is called when the live file has been read to its end, or
// is missing: the input's part of a backfill is done. It returns
// errBackfillDone when the follower is then to end (--backfill-only).
func (fw *follower) noteCaughtUp() error {
	if !fw.catchingUp() {
		return nil
	}
	fw.catchUpDone()
	if fw.bf.run.opts.Only {
		return errBackfillDone
	}
	return nil
}

// catchUpDone records that the follower's live file has been read to its
// end once; the last input to get there ends the backfill.
func (fw *follower) catchUpDone() {
	fw.bf.caughtUp = true
	run := fw.bf.run
	if run.left.Add(-1) == 0 {
		if run.display != nil {
			run.display.Done()
		}
		run.logger.Info("backfill done; every input has been read to its end")
	}
}

// leaveBackfill gives up the input's part in a backfill: the tailer
// holding the file publishes it. It reports whether the follower is to
// end (a backfill-only run).
func (fw *follower) leaveBackfill() bool {
	if fw.bf == nil {
		return false
	}
	fw.bf.tasks = nil
	if fw.bf.caughtUp {
		return false
	}
	fw.catchUpDone()
	return fw.bf.run.opts.Only
}

// copyPlanned publishes the rotated siblings the backfill planned, once:
// not again after a lost lease.
func (fw *follower) copyPlanned(ctx context.Context) error {
	if fw.bf == nil {
		return nil
	}
	if err := fw.copySiblings(ctx, fw.bf.tasks); err != nil {
		return err
	}
	fw.bf.tasks = nil
	return nil
}

// planBackfill decides which rotated siblings of the input to publish,
// and from where. The file the input's position is in is left to open,
// which continues it on the input's subject wherever it now is.
func (fw *follower) planBackfill(ctx context.Context) error {
	if err := fw.resolveSubject(ctx); err != nil {
		return err
	}
	pos, err := retrying(ctx, fw.logger, "read position", func() (*savedPosition, error) { return fw.live.pos.last(ctx) })
	if err != nil {
		return err
	}
	sibs, err := fw.siblings()
	if err != nil {
		fw.logger.Warn("cannot list rotated files; backfilling the live file only", "err", err)
		return nil
	}
	var current *sibling
	if pos != nil && !pos.eof {
		if i := findSibling(sibs, pos.id); i >= 0 {
			current = sibs[i]
		}
	}
	fw.bf.tasks, err = fw.planSiblings(ctx, sibs, current)
	return err
}

// siblingTask is a rotated sibling to publish on a subject of its own.
type siblingTask struct {
	s       *sibling
	subject string
	start   int64  // in the content: decompressed bytes for a .gz
	lastSeq uint64 // of the last message on subject, 0 if none
}

// backfillSubject is where a sibling the input never published goes: a
// subject per file, so an interrupted backfill resumes at its own
// position. It is named by the file's first bytes, not its inode or name,
// so it is the same after the file is renamed (.1 → .2) or compressed,
// and by the instance and path of the file's subject (lease.go), so it is
// the same for every tailer that takes the file over.
func (fw *follower) backfillSubject(s *sibling) string {
	instance, path := fw.lease.subjectOwner()
	return fw.env.bus.HitsSubject(instance, bus.Key(path, "backfill", s.identity().contentKey()))
}

// planSiblings decides where each sibling is to be read from: past the
// end recorded for it on its own subject, else past the furthest end
// recorded for it on the input's subject (a file followed live, then
// rotated), else from its start. A sibling whose own subject says it is
// complete, or a plain one already read to its size, is left out, and so
// is skip, which the caller reads itself.
func (fw *follower) planSiblings(ctx context.Context, sibs []*sibling, skip *sibling) ([]siblingTask, error) {
	if len(sibs) == 0 {
		return nil, nil
	}
	recorded, err := retrying(ctx, fw.logger, "scan published files", func() ([]recordedFile, error) { return fw.live.pos.recordedFiles(ctx) })
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
		subject := fw.backfillSubject(s)
		bpos, err := retrying(ctx, fw.logger, "read backfill position", func() (*savedPosition, error) { return fw.live.pos.on(ctx, subject) })
		if err != nil {
			return nil, err
		}
		t := siblingTask{s: s, subject: subject}
		switch {
		case bpos != nil && bpos.eof:
			continue
		case bpos != nil && !headMatches(s.head, bpos.id):
			fw.logger.Warn("backfill subject holds another file; skipped", "rotated", s.path, "subject", subject)
			continue
		case bpos != nil:
			t.start, t.lastSeq = bpos.end, bpos.seq
		default:
			for _, r := range recorded {
				if s.match(r.id) != noMatch {
					t.start = max(t.start, r.end)
				}
			}
		}
		if !s.gz && t.start >= s.size {
			continue
		}
		fw.live.meter.addTotal(s.toRead(t.start))
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// copySiblings publishes each planned sibling on its subject, from its
// start to its end.
func (fw *follower) copySiblings(ctx context.Context, tasks []siblingTask) error {
	for _, t := range tasks {
		for {
			p := fw.siblingPipe(t.subject)
			p.pos.lastSeq, p.rd.id = t.lastSeq, t.s.identity()
			p.rd.startAt(t.start)
			fw.logger.Log(ctx, fw.logLevel(), "backfilling rotated file", "rotated", t.s.path, "offset", t.start)
			err := p.copyRotated(ctx, t.s, fw.openSibling, true, fw.env.cfg.RotateGrace, fw.env.cfg.PollInterval)
			if !errors.Is(err, errResync) {
				if err != nil {
					return err
				}
				break
			}
			// Someone else published on the subject: go on from there.
			pos, err := retrying(ctx, fw.logger, "read backfill position", func() (*savedPosition, error) { return fw.live.pos.on(ctx, t.subject) })
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

// siblingPipe is a pipe that publishes a sibling on subject, sharing the
// input's format, counters and progress.
func (fw *follower) siblingPipe(subject string) *pipe {
	batch := newHitBatch(fw.live.rd.batch.parser, fw.in.Site, fw.env.pages, fw.env.metrics, fw.logger)
	p := newPipe(fw.env, fw.in, subject, batch, fw.logger)
	p.meter = fw.live.meter
	p.pos.source = fw.live.pos.source
	return p
}

// meter counts what a backfill reads, for the progress display and the
// metrics. A nil meter (no backfill) counts nothing.
type meter struct {
	display *progress.Display
	bytes   prometheus.Counter
	lines   prometheus.Counter
	total   prometheus.Gauge
}

func (m *meter) add(bytes, lines int64) {
	if m == nil {
		return
	}
	m.bytes.Add(float64(bytes))
	m.lines.Add(float64(lines))
	if m.display != nil {
		m.display.Add(bytes, lines)
	}
}

func (m *meter) addTotal(bytes int64) {
	if m == nil {
		return
	}
	m.total.Add(float64(bytes))
	if m.display != nil {
		m.display.AddTotal(bytes)
	}
}

func (m *meter) setFile(path string) {
	if m != nil && m.display != nil {
		m.display.SetFile(path)
	}
}
