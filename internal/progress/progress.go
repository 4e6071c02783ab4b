// Package progress shows how far a long read has got. On a terminal it
// redraws one line in place: percent, bytes and lines done, rates, ETA and
// the file being read. Elsewhere it stays quiet: a structured log line now
// and then, and a summary at the end.
//
// It is made for `ingest tail --from-start` backfills, whose readers call
// Add millions of times a second, so counting is two atomic adds and all
// the arithmetic and drawing happen on Run's clock instead.
package progress

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"
)

// TerminalMode says whether to draw for a terminal.
type TerminalMode int

const (
	// TerminalAuto draws for a terminal when w is an *os.File on one, so
	// the same command is quiet under systemd or with stderr redirected.
	TerminalAuto TerminalMode = iota
	// TerminalOn draws for a terminal whatever w is.
	TerminalOn
	// TerminalOff never draws for a terminal, even when w is one.
	TerminalOff
)

// Options configure a Display. The zero value is usable.
type Options struct {
	// Total is the number of bytes to read; 0 means not known yet.
	// AddTotal grows it as files are discovered.
	Total int64
	// Interval is how often Run draws: default 200ms on a terminal and
	// 30s otherwise, where every draw is a log line.
	Interval time.Duration
	// Terminal chooses between the redrawn line and the quiet mode.
	Terminal TerminalMode
	// Width is the terminal's width in columns; 0 asks the terminal at
	// every draw (it may be resized) and falls back to 80.
	Width int
	// Logger receives the quiet mode's lines. Without one the quiet mode
	// writes only the final summary, to w.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now. Tests pass a fake one.
	Now func() time.Time
}

const (
	terminalInterval = 200 * time.Millisecond
	quietInterval    = 30 * time.Second
	defaultWidth     = 80
	// rateWindow is the EWMA's time constant: long enough that a burst of
	// short lines or a gzip block boundary does not make the ETA jump,
	// short enough to follow a switch to a slower disk.
	rateWindow = 5 * time.Second
	clearEOL   = "\x1b[K"
)

// Display counts progress and shows it. Add, AddTotal, SetFile and Done
// may be called from any goroutine.
type Display struct {
	// The counters come first: they are what the hot path touches.
	bytes atomic.Int64
	lines atomic.Int64
	total atomic.Int64
	file  atomic.Pointer[string]

	w        io.Writer
	terminal bool
	fd       int // w's file descriptor, -1 when w is not a file
	width    int
	interval time.Duration
	logger   *slog.Logger
	now      func() time.Time
	start    time.Time

	done     chan struct{}
	doneOnce sync.Once

	mu       sync.Mutex // serialises drawing; guards the fields below
	finished bool
	lastAt   time.Time
	lastB    int64
	lastL    int64
	byteRate ewma
	lineRate ewma
}

// New returns a Display writing to w. Elapsed time and average rates are
// counted from this call.
func New(w io.Writer, opts Options) *Display {
	d := &Display{
		w:        w,
		fd:       -1,
		width:    opts.Width,
		interval: opts.Interval,
		logger:   opts.Logger,
		now:      opts.Now,
		done:     make(chan struct{}),
	}
	if d.now == nil {
		d.now = time.Now
	}
	if f, ok := w.(*os.File); ok {
		d.fd = int(f.Fd())
	}
	switch opts.Terminal {
	case TerminalOn:
		d.terminal = true
	case TerminalAuto:
		d.terminal = d.fd >= 0 && term.IsTerminal(d.fd)
	}
	if d.interval <= 0 {
		d.interval = quietInterval
		if d.terminal {
			d.interval = terminalInterval
		}
	}
	d.total.Store(opts.Total)
	d.start = d.now()
	d.lastAt = d.start
	return d
}

// Add counts bytes and lines read. It is two atomic adds and nothing
// else, so readers can call it per line.
func (d *Display) Add(bytes, lines int64) {
	d.bytes.Add(bytes)
	d.lines.Add(lines)
}

// AddTotal grows the total as more files to read are found.
func (d *Display) AddTotal(bytes int64) { d.total.Add(bytes) }

// SetFile names the file being read now.
func (d *Display) SetFile(name string) { d.file.Store(&name) }

// Done writes the final summary and makes Run return. Once it returns the
// summary has been written, so a command may exit straight after. Calls
// after the first do nothing.
func (d *Display) Done() {
	d.finish("done")
	d.doneOnce.Do(func() { close(d.done) })
}

// Run draws every Interval until Done is called or ctx ends; then it
// returns nil. When ctx ends first it writes the summary as "stopped", so
// an interrupted backfill still says how far it got and a terminal's
// prompt starts on a fresh line. Run is meant to be called once.
func (d *Display) Run(ctx context.Context) error {
	t := time.NewTicker(d.interval)
	defer t.Stop()
	for {
		select {
		case <-d.done:
			return nil
		case <-ctx.Done():
			d.finish("stopped")
			return nil
		case <-t.C:
			d.draw()
		}
	}
}

// draw shows the current state once. Write errors are ignored: a progress
// display that cannot be written must not stop the read it reports on.
func (d *Display) draw() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.finished {
		return
	}
	s := d.sample()
	switch {
	case d.terminal:
		_, _ = io.WriteString(d.w, "\r"+s.line(d.currentWidth())+clearEOL)
	case d.logger != nil:
		d.logger.Info("progress", s.attrs()...)
	}
}

// finish writes the summary once, whichever of Done and Run's ctx comes
// first.
func (d *Display) finish(verb string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.finished {
		return
	}
	d.finished = true
	s := d.sample()
	switch {
	case d.terminal:
		_, _ = io.WriteString(d.w, "\r"+s.summary(verb)+clearEOL+"\n")
	case d.logger != nil:
		d.logger.Info("progress "+verb, s.summaryAttrs()...)
	default:
		_, _ = io.WriteString(d.w, s.summary(verb)+"\n")
	}
}

// sample reads the counters and feeds the rate estimates. d.mu is held.
func (d *Display) sample() status {
	now := d.now()
	s := status{
		bytes:   d.bytes.Load(),
		lines:   d.lines.Load(),
		total:   d.total.Load(),
		elapsed: now.Sub(d.start),
	}
	if f := d.file.Load(); f != nil {
		s.file = *f
	}
	if dt := now.Sub(d.lastAt); dt > 0 {
		d.byteRate.observe(float64(s.bytes-d.lastB)/dt.Seconds(), dt)
		d.lineRate.observe(float64(s.lines-d.lastL)/dt.Seconds(), dt)
		d.lastAt, d.lastB, d.lastL = now, s.bytes, s.lines
	}
	s.byteRate, s.rated = d.byteRate.value()
	s.lineRate, _ = d.lineRate.value()
	return s
}

// currentWidth asks the terminal each time because it may be resized
// during a long backfill; the ioctl is cheap next to a 200ms interval.
func (d *Display) currentWidth() int {
	if d.width > 0 {
		return d.width
	}
	if d.fd >= 0 {
		if w, _, err := term.GetSize(d.fd); err == nil && w > 0 {
			return w
		}
	}
	return defaultWidth
}
