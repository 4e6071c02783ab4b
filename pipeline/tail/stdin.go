package tail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/pipeline/pageview"
)

// Stdin publishes the access-log lines written to ingest's standard
// input, for Apache's piped logs:
//
//	CustomLog "|/usr/bin/ingest tail --stdin --config /etc/pagewatch.yaml" combined
//
// Its hits go to the subject of bus.Key("stdin") of the instance; the
// format and site are ingest.tail.stdin's. It reads standard input alone:
// the files of ingest.tail.inputs and the syslog listener are left to the
// `ingest tail` daemon, which may use the same config file. Apache starts
// a piped logger per CustomLog and restarts it when it dies, and two
// tailers following one file under one instance would contend for its
// position, or for the syslog port.
//
// A pipe cannot be read again. What it held when ingest died, and the
// lines read but not yet acknowledged by JetStream, are lost; a file input
// loses nothing. While NATS is away the publishers stop taking batches,
// ingest stops reading, the pipe (64 KiB on Linux) fills, and Apache's
// children block writing their log lines: requests stall rather than
// lines being dropped. At end of input (Apache closed the pipe) Run
// publishes what it read and returns nil.
type Stdin struct {
	r   io.Reader
	st  *stream
	cfg Config

	pending  []byte // an incomplete line
	skipping int    // bytes of an over-long line dropped so far; 0 if none
}

// NewStdin returns a Stdin reading r (os.Stdin, in `ingest tail --stdin`).
// cfg.Stdin is checked here even when left at its defaults, which name no
// site: Validate checks it only when it is set in the file.
func NewStdin(ctx context.Context, cfg Config, b *bus.Bus, r io.Reader, logger *slog.Logger, reg prometheus.Registerer) (*Stdin, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p, err := cfg.Stdin.parser(keyStdin)
	if err != nil {
		return nil, err
	}
	pages, err := pageview.New(cfg.Pages)
	if err != nil {
		return nil, err
	}
	hits, err := b.HitsStream(ctx)
	if err != nil {
		return nil, err
	}
	env := newStreamEnv(cfg, b, hits, logger, newMetrics(reg), newLineRules(cfg, pages, b, reg))
	return &Stdin{r: r, cfg: cfg, st: env.newStream("stdin", "stdin", cfg.Stdin, p)}, nil
}

// Run reads until end of input and returns nil once everything read is
// published, or returns when ctx is done, after up to publish_timeout
// more to publish what was read. It fails on a read error, and when lines
// read could not be published.
//
// A Read in progress cannot be interrupted (standard input is a blocking
// descriptor); when ctx ends, Run returns without waiting for it.
func (s *Stdin) Run(ctx context.Context) error {
	s.st.run(ctx, s.cfg.PublishTimeout)
	readErr := s.read(ctx)
	lost := s.st.close()
	switch {
	case readErr != nil:
		return fmt.Errorf("read stdin: %w", readErr)
	case lost > 0:
		return fmt.Errorf("stdin: %d lines read were not published", lost)
	}
	return nil
}

// read hands the lines of r to the stream until end of input (nil), ctx
// is done (nil) or a read fails.
func (s *Stdin) read(ctx context.Context) error {
	chunks := make(chan []byte)
	free := make(chan []byte, 2) // two buffers: one read into, one consumed
	free <- make([]byte, readChunk)
	free <- make([]byte, readChunk)
	quit := make(chan struct{})
	defer close(quit)
	errc := make(chan error, 1)
	go func() {
		for {
			var buf []byte
			select {
			case buf = <-free:
			case <-quit:
				return
			}
			n, err := s.r.Read(buf)
			if n > 0 {
				select {
				case chunks <- buf[:n]:
				case <-quit:
					return
				}
			} else {
				free <- buf
			}
			if err != nil {
				errc <- err
				return
			}
		}
	}()
	tick := time.NewTicker(s.cfg.Stdin.FlushInterval / 2)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			s.st.flushOld()
		case chunk := <-chunks:
			s.consume(chunk)
			free <- chunk[:cap(chunk)]
		case err := <-errc:
			// Chunks are handed over before the error is sent; a reader
			// returning data with io.EOF has its data consumed above.
			s.finish()
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// consume splits a chunk into lines, keeping an incomplete last line for
// the next chunk; a line past max_line_bytes is dropped as it comes, as a
// file's is, so one bad line never grows memory.
func (s *Stdin) consume(chunk []byte) {
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			if s.skipping > 0 || len(s.pending)+len(chunk) > s.cfg.MaxLineBytes {
				s.skipping += len(s.pending) + len(chunk)
				s.pending = s.pending[:0]
			} else {
				s.pending = append(s.pending, chunk...)
			}
			return
		}
		switch {
		case s.skipping > 0:
			s.st.skipLong(s.skipping + i + 1)
			s.skipping = 0
		case len(s.pending)+i > s.cfg.MaxLineBytes:
			// Whole in one chunk or not, a line past the limit is skipped.
			s.st.skipLong(len(s.pending) + i + 1)
			s.pending = s.pending[:0]
		case len(s.pending) > 0:
			s.pending = append(s.pending, chunk[:i]...)
			s.st.add(s.pending, len(s.pending)+1)
			s.pending = s.pending[:0]
		default:
			s.st.add(chunk[:i], i+1)
		}
		chunk = chunk[i+1:]
	}
}

// finish takes a last line without a newline as complete: the writer is
// gone, nothing more of it will come.
func (s *Stdin) finish() {
	switch {
	case s.skipping > 0:
		s.st.skipLong(s.skipping)
	case len(s.pending) > 0:
		s.st.add(s.pending, len(s.pending))
	}
	s.skipping, s.pending = 0, s.pending[:0]
}
