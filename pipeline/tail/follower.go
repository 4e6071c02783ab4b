package tail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/pagewatch/pagewatch/pipeline/hit"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
)

// Headers of a hits message. Start and End are byte offsets in the file.
const (
	HeaderFile  = "Pagewatch-File"
	HeaderPath  = "Pagewatch-Path"
	HeaderStart = "Pagewatch-Start"
	HeaderEnd   = "Pagewatch-End"
	HeaderLines = "Pagewatch-Lines"
)

// errResync means the stream holds a position other than ours: the
// follower must reopen its file at the stream's position.
var errResync = errors.New("position in stream moved")

const readChunk = 256 << 10

// follower tails one file.
type follower struct {
	*Tailer
	in      Input
	parser  logformat.Parser
	sites   map[string]string // vhost as logged → site, for an input without a site
	subject string
	logger  *slog.Logger

	f        *os.File
	id       identity
	offset   int64  // end of the last line consumed
	readPos  int64  // end of the bytes read into pending
	pending  []byte // bytes read past offset: at most one incomplete line
	skipping bool   // inside a line longer than MaxLineBytes

	lastSeq     uint64 // stream sequence of the last message on subject
	lastPublish time.Time
	keepalive   time.Duration // re-publish the position of a quiet file this often
	lastData    time.Time     // when the file last had new bytes
	rotatedAt   time.Time     // when a successor appeared at the path; zero if none
	batchStart  int64
	lines       int // lines consumed into the batch, hits or not
	enc         hit.Encoder
	entry       logformat.Entry
}

func (fw *follower) run(ctx context.Context) error {
	for {
		err := fw.follow(ctx)
		if fw.f != nil {
			fw.f.Close()
			fw.f = nil
		}
		if !errors.Is(err, errResync) {
			return err
		}
		fw.logger.Warn("position in JetStream differs from ours; resuming from the stream's (is another tailer using the same instance name?)")
	}
}

func (fw *follower) follow(ctx context.Context) error {
	if err := fw.open(ctx); err != nil {
		return err
	}
	for {
		n, err := fw.readLines(ctx)
		if err != nil {
			return err
		}
		if n > 0 {
			fw.lastData = time.Now()
			continue
		}
		// At the end of what the file has. Publish what was read, unless
		// inside an over-long line: a position must fall between lines.
		if !fw.skipping && (fw.lines > 0 || time.Since(fw.lastPublish) > fw.keepalive) {
			// A quiet file re-publishes its position now and then, so it
			// does not age out of the stream with the last batch.
			if err := fw.publish(ctx); err != nil {
				return err
			}
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
		case <-time.After(fw.cfg.PollInterval):
		}
	}
}

// open finds the file's position in the stream and opens the file there,
// waiting for the file to exist.
func (fw *follower) open(ctx context.Context) error {
	pos, err := retrying(ctx, fw, "read position", func() (*position, error) { return fw.lastPosition(ctx) })
	if err != nil {
		return err
	}
	fw.lastSeq, fw.lastPublish = 0, time.Now()
	if pos != nil {
		fw.lastSeq, fw.lastPublish = pos.seq, pos.at
	}
	appeared := false
	for {
		f, err := os.Open(fw.in.Path)
		if err == nil {
			fw.f = f
			break
		}
		if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("open: %w", err)
		}
		if !appeared {
			fw.logger.Info("waiting for file to appear")
		}
		appeared = true
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(fw.cfg.PollInterval):
		}
	}
	if fw.id, err = identify(fw.f); err != nil {
		return err
	}
	size, err := fw.f.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("size: %w", err)
	}
	var start int64
	marker := false
	switch {
	case pos != nil:
		same, err := sameFile(fw.f, pos.id)
		if err != nil {
			return err
		}
		switch {
		case same && size >= pos.end:
			start = pos.end
		case same:
			fw.logger.Warn("file shrank while ingest was stopped; reading it from the beginning", "size", size, "saved_offset", pos.end)
		default:
			fw.logger.Warn("file was replaced while ingest was stopped; reading the new file from the beginning", "saved_file", pos.id.String())
		}
	case appeared || fw.cfg.StartAt == "beginning":
		start = 0
	default:
		start, marker = size, true
	}
	fw.offset, fw.readPos, fw.batchStart = start, start, start
	fw.pending, fw.skipping = fw.pending[:0], false
	fw.enc.Reset()
	fw.lines = 0
	fw.logger.Info("following", "offset", start, "file_id", fw.id.String(), "stream_seq", fw.lastSeq)
	if marker {
		// Record where we start, so a restart before the first new line
		// resumes here rather than at the (by then later) end.
		return fw.publish(ctx)
	}
	return nil
}

// readLines reads what the file has past readPos and consumes its complete
// lines, publishing each batch as it fills. It returns the bytes read.
func (fw *follower) readLines(ctx context.Context) (int, error) {
	if cap(fw.pending)-len(fw.pending) < readChunk {
		grown := make([]byte, len(fw.pending), len(fw.pending)+readChunk)
		copy(grown, fw.pending)
		fw.pending = grown
	}
	space := fw.pending[len(fw.pending) : len(fw.pending)+readChunk]
	n, err := fw.f.ReadAt(space, fw.readPos)
	if err != nil && err != io.EOF {
		return 0, fmt.Errorf("read at %d: %w", fw.readPos, err)
	}
	if n == 0 {
		return 0, nil
	}
	fw.metrics.bytes.Add(float64(n))
	fw.readPos += int64(n)
	fw.pending = fw.pending[:len(fw.pending)+n]
	return n, fw.consumePending(ctx)
}

func (fw *follower) consumePending(ctx context.Context) error {
	full := fw.cfg.BatchBytes - fw.cfg.MaxLineBytes - 1024
	start := 0
	for {
		i := bytes.IndexByte(fw.pending[start:], '\n')
		if i < 0 {
			break
		}
		if fw.skipping {
			fw.skipping = false
		} else {
			fw.consume(fw.pending[start:start+i], fw.offset)
		}
		fw.offset += int64(i + 1)
		start += i + 1
		if fw.lines >= fw.cfg.BatchLines || fw.enc.Size() >= full {
			if err := fw.publish(ctx); err != nil {
				return err
			}
		}
	}
	rest := copy(fw.pending, fw.pending[start:])
	fw.pending = fw.pending[:rest]
	if len(fw.pending) > fw.cfg.MaxLineBytes {
		// Drop the over-long line's bytes as they come, so one bad line
		// never stalls the file or grows memory.
		if !fw.skipping {
			fw.skipping = true
			fw.lines++
			fw.metrics.lines.WithLabelValues("malformed").Inc()
			fw.metrics.malformed.WithLabelValues(logformat.ReasonTooLong).Inc()
			fw.logger.Warn("line too long; skipped", "offset", fw.offset, "max_line_bytes", fw.cfg.MaxLineBytes)
		}
		fw.offset += int64(len(fw.pending))
		fw.pending = fw.pending[:0]
	}
	return nil
}

// consume turns one line into a hit in the batch, or counts why not.
func (fw *follower) consume(line []byte, offset int64) {
	fw.lines++
	if err := fw.parser.Parse(line, &fw.entry); err != nil {
		reason := "unknown"
		var pe *logformat.ParseError
		if errors.As(err, &pe) {
			reason = pe.Reason
		}
		fw.metrics.lines.WithLabelValues("malformed").Inc()
		fw.metrics.malformed.WithLabelValues(reason).Inc()
		fw.logger.Debug("malformed line", "offset", offset, "reason", reason)
		return
	}
	site := fw.in.Site
	if site == "" {
		if site = fw.siteOf(fw.entry.Vhost); site == "" {
			fw.metrics.skipped(filterNoSite)
			fw.logger.Debug("line names no virtual host", "offset", offset)
			return
		}
	}
	// h shares the line's bytes until enc.Add copies them, below.
	var h hit.Hit
	if drop := fw.pages.Fill(&h, &fw.entry, site); drop != "" {
		fw.metrics.skipped(drop)
		return
	}
	h.Offset = uint64(offset)
	fw.enc.Add(&h)
	fw.metrics.lines.WithLabelValues("hit").Inc()
}
