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

// inputBackfill is one follower's part in a backfill. The follower's is
// nil without --from-start, and a nil one is in no backfill: it never
// catches up, copies nothing and logs at Info.
type inputBackfill struct {
	run      *backfillRun
	rotated  *rotatedFiles // the follower's: the siblings it plans and copies
	logger   *slog.Logger
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
		fw.bf = &inputBackfill{run: bf, rotated: fw.rotated, logger: fw.logger}
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

func countTasks(fws []*follower) int {
	n := 0
	for _, fw := range fws {
		if fw.bf != nil {
			n += len(fw.bf.tasks)
		}
	}
	return n
}

// planBackfill reads the input's position on the subject its record
// names, which the backfill plans around.
func (fw *follower) planBackfill(ctx context.Context) error {
	if err := fw.resolveSubject(ctx); err != nil {
		return err
	}
	pos, err := retrying(ctx, fw.logger, "read position", func() (*savedPosition, error) { return fw.live.pos.last(ctx) })
	if err != nil {
		return err
	}
	return fw.bf.plan(ctx, pos)
}

// plan decides which rotated siblings of the input to publish, and from
// where. The file the input's position (pos) is in is left to open,
// which continues it on the input's subject wherever it now is.
func (b *inputBackfill) plan(ctx context.Context, pos *savedPosition) error {
	sibs, err := b.rotated.list()
	if err != nil {
		b.logger.Warn("cannot list rotated files; backfilling the live file only", "err", err)
		return nil
	}
	var current *sibling
	if pos != nil && !pos.eof {
		if i := findSibling(sibs, pos.id); i >= 0 {
			current = sibs[i]
		}
	}
	b.tasks, err = b.rotated.plan(ctx, sibs, current)
	return err
}

// copyPlanned publishes the rotated siblings the backfill planned, once:
// not again after a lost lease.
func (b *inputBackfill) copyPlanned(ctx context.Context) error {
	if b == nil {
		return nil
	}
	if err := b.rotated.copy(ctx, b.tasks, b.logLevel(), b.rotated.env.cfg.RotateGrace); err != nil {
		return err
	}
	b.tasks = nil
	return nil
}

// logLevel is the level of a per-file Info line: lower while a backfill
// draws on a terminal.
func (b *inputBackfill) logLevel() slog.Level {
	if b.catchingUp() {
		return b.run.level
	}
	return slog.LevelInfo
}

// catchingUp reports whether a backfill is reading the live file for the
// first time.
func (b *inputBackfill) catchingUp() bool { return b != nil && !b.caughtUp }

// noteCaughtUp is called when the live file has been read to its end, or
// is missing: the input's part of a backfill is done. It returns
// errBackfillDone when the follower is then to end (--backfill-only).
func (b *inputBackfill) noteCaughtUp() error {
	if !b.catchingUp() {
		return nil
	}
	b.catchUpDone()
	if b.run.opts.Only {
		return errBackfillDone
	}
	return nil
}

// catchUpDone records that the follower's live file has been read to its
// end once; the last input to get there ends the backfill.
func (b *inputBackfill) catchUpDone() {
	b.caughtUp = true
	run := b.run
	if run.left.Add(-1) == 0 {
		if run.display != nil {
			run.display.Done()
		}
		run.logger.Info("backfill done; every input has been read to its end")
	}
}

// leave gives up the input's part in a backfill: the tailer holding the
// file publishes it. It reports whether the follower is to end (a
// backfill-only run).
func (b *inputBackfill) leave() bool {
	if b == nil {
		return false
	}
	b.tasks = nil
	if b.caughtUp {
		return false
	}
	b.catchUpDone()
	return b.run.opts.Only
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
