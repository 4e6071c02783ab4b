package tail

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"
)

// pipe joins a reader to a position: the lines read from one file go out
// on one subject, each batch conditional on the one before it. A
// follower has one for its live file; a backfill makes one per rotated
// sibling, on the sibling's own subject.
type pipe struct {
	rd    reader
	pos   position
	meter *meter // what a backfill reads; nil counts nothing
	eof   bool   // the next publish is the last of a complete file
}

// newPipe returns a pipe of input in publishing on subject. The caller
// points rd.full at the pipe once it has its final address (send).
func newPipe(env *fileEnv, in Input, subject string, batch hitBatch, logger *slog.Logger) *pipe {
	p := &pipe{
		rd:  reader{limits: limitsOf(env.cfg), logger: logger, bytes: env.metrics.bytes, batch: batch},
		pos: newPosition(env, in.Path, subject, logger),
	}
	p.rd.full = p.send
	return p
}

// send waits for the batch before this one to be stored, then starts
// publishing the batch read so far; the next is read meanwhile.
func (p *pipe) send(ctx context.Context) error {
	if err := p.pos.settle(ctx); err != nil {
		return err
	}
	id, err := p.rd.ident()
	if err != nil {
		return err
	}
	p.pos.launch(ctx, &p.rd.batch, id, p.rd.batchStart, p.rd.offset, p.eof)
	p.rd.batchStart = p.rd.offset
	return nil
}

// settle waits for the batch in flight, if any. Its error (errResync, or
// ctx's) is the follower's: the batch after it, read meanwhile, is read
// again.
func (p *pipe) settle(ctx context.Context) error { return p.pos.settle(ctx) }

// publish sends the batch (possibly empty: a position marker) and waits
// until it and the batch before it are stored. It retries until they are
// or ctx ends: the file is the buffer while JetStream is away, so nothing
// is lost by waiting.
func (p *pipe) publish(ctx context.Context) error {
	if err := p.send(ctx); err != nil {
		return err
	}
	return p.settle(ctx)
}

// publishEOF publishes the batch (possibly empty) as the last of a file
// that is complete: a later run need not open the file again.
func (p *pipe) publishEOF(ctx context.Context) error {
	p.eof = true
	defer func() { p.eof = false }()
	return p.publish(ctx)
}

// published is where the bytes not yet stored in JetStream start.
func (p *pipe) published() int64 { return p.pos.published(p.rd.batchStart) }

// read reads and consumes what src has past the reader's position. The
// last batch sent may still be in flight when it returns without error;
// the caller settles it before it publishes, or leaves the file. On
// error nothing is in flight.
func (p *pipe) read(ctx context.Context, src io.ReaderAt) (int, error) {
	n, err := p.rd.read(ctx, src)
	if err != nil {
		// A batch in flight is stored or failed before the error is
		// handled: a damaged .gz publishes the lines read before the
		// damage, after it.
		if serr := p.settle(ctx); serr != nil {
			return n, serr
		}
	}
	return n, err
}

// finish reads src to its end and consumes its last line, newline or not:
// nothing will be written to it any more. The batches read before the
// last one are stored when it returns.
func (p *pipe) finish(ctx context.Context, src io.ReaderAt) error {
	for {
		n, err := p.read(ctx, src)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	p.rd.consumeLastLine()
	return p.settle(ctx)
}

// copyRotated reads a rotated file's content from the reader's offset to
// its end and publishes it, its last line too, newline or not. A plain
// file modified less than grace ago may still be written by a server
// that has not reopened its logs: it is read until quiet that long. eof
// marks the last message as the file's end, so a later backfill skips it
// without opening it.
//
// s is opened through open, which finds it again if logrotate renamed it
// since it was listed (rotatedFiles.open).
func (p *pipe) copyRotated(ctx context.Context, s *sibling, open func(*sibling) (*content, error), eof bool, grace, poll time.Duration) error {
	c, err := open(s)
	if err != nil {
		return err
	}
	defer c.Close()
	logger := p.rd.logger
	if !s.gz {
		if st, err := c.f.Stat(); err == nil && st.Size() < p.rd.offset {
			logger.Warn("rotated file is shorter than its saved position; skipped", "rotated", s.path, "size", st.Size(), "offset", p.rd.offset)
			return nil
		}
	}
	p.rd.finished = true
	defer func() { p.rd.finished = false }()
	p.meter.setFile(s.path)
	// What the progress total counted: a .gz whole, a plain file from
	// where reading starts.
	disk := p.rd.readPos
	if s.gz {
		disk = 0
	}
	for {
		linesBefore := p.rd.linesRead
		n, err := p.read(ctx, c)
		now := c.diskBytes(p.rd.readPos)
		p.meter.add(now-disk, p.rd.linesRead-linesBefore)
		disk = now
		var rerr *readError
		switch {
		case errors.Is(err, errShorter):
			logger.Warn("rotated file is shorter than its saved position; skipped", "rotated", s.path, "offset", p.rd.offset)
			return nil
		case s.gz && errors.As(err, &rerr):
			// Damaged, or still being written by gzip: publish the lines
			// before the damage, without marking the end, so a later run
			// can try again from there.
			logger.Warn("compressed rotated file is damaged or incomplete; published the lines before the damage", "rotated", s.path, "offset", p.rd.offset, "err", err)
			if p.rd.batch.lines == 0 {
				return nil
			}
			return p.publish(ctx)
		case err != nil:
			return err
		case n > 0:
			continue
		}
		if modifiedWithin(c, grace) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(poll):
			}
			continue
		}
		break
	}
	linesBefore := p.rd.linesRead
	p.rd.consumeLastLine()
	p.meter.add(0, p.rd.linesRead-linesBefore)
	if eof {
		return p.publishEOF(ctx)
	}
	if p.rd.batch.lines > 0 || p.rd.offset > p.rd.batchStart {
		return p.publish(ctx)
	}
	return p.settle(ctx)
}
