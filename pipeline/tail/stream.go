package tail

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
)

// HeaderStream names the stream a message of a non-file input belongs to:
// "stdin.<start>" or "syslog-udp.<start>", start being when the process
// began reading it (Unix nanoseconds). Its Pagewatch-Start and
// Pagewatch-End are byte offsets in that stream, and no message of it
// carries Pagewatch-File: there is no file to resume, so nothing reads
// such a subject back.
const HeaderStream = "Pagewatch-Stream"

// streamEnv is what the streams of one process share with its tailer.
type streamEnv struct {
	cfg     Config
	bus     *bus.Bus
	hits    jetstream.Stream
	logger  *slog.Logger
	metrics *metrics
	rules   lineRules
	// dedup is JetStream's duplicate window on the hits stream: how long
	// a message ID is remembered (see publish).
	dedup time.Duration
	start int64 // Unix nanoseconds, in every message ID of this process
}

func newStreamEnv(cfg Config, b *bus.Bus, hits jetstream.Stream, logger *slog.Logger, m *metrics, rules lineRules) *streamEnv {
	dedup := 2 * time.Minute // what bus.HitsStream sets
	if info := hits.CachedInfo(); info != nil && info.Config.Duplicates > 0 {
		dedup = info.Config.Duplicates
	}
	return &streamEnv{cfg: cfg, bus: b, hits: hits, logger: logger, metrics: m, rules: rules, dedup: dedup, start: time.Now().UnixNano()}
}

// stream turns the lines of a non-replayable source into batches of hits,
// parsed, filtered and batched like a file's, and publishes them
// asynchronously: up to in.MaxInFlight batches await their ack while the
// next fills. Lines are added by one or more goroutines (add is safe for
// that); a full batch, or one older than in.FlushInterval (flushOld), is
// handed to the publishers, and add blocks while they all are busy.
//
// Every batch's Nats-Msg-Id is "<instance>.<name>.<start>.<n>": the same
// for every retry of the batch, and different for every batch ever (start
// is this process's), so JetStream stores a retried batch once. There is
// no expected-sequence condition as for files: several processes (two
// piped loggers of one Apache, an old and a new one across a restart)
// may publish on one subject, and nothing has to be resumed from it.
type stream struct {
	env      *streamEnv
	name     string // "stdin", "syslog-udp", "syslog-tcp"
	subject  string
	idPrefix string
	header   string // HeaderStream's value
	in       StreamInput
	logger   *slog.Logger
	full     int // a batch this large is published, leaving room for one more line

	mu     sync.Mutex
	batch  hitBatch  // the lines taken since the last seal
	offset int64     // bytes of the stream consumed, from its start
	begin  int64     // offset of the batch's first line
	born   time.Time // when the batch got its first line
	n      uint64    // batches sealed
	total  int64     // lines taken, for the summary at close
	closed bool

	out  chan *batch
	wg   sync.WaitGroup
	pub  context.Context // the publishers': outlives ctx by a drain period
	done func()          // cancels pub
	stop func() bool     // unregisters the drain timer's start
	// acked is the highest stream sequence acked to this stream: a batch
	// first sent after it was acked can only land above it.
	acked atomic.Uint64
	lost  atomic.Int64 // lines read and never published (shutdown)
	// lastPublish is when a batch was last stored (unix nanoseconds), for
	// the heartbeat.
	lastPublish atomic.Int64
}

// batch is one sealed message and what it holds, for the metrics.
type batch struct {
	msg   *nats.Msg
	lines int
	// sent is when it was first sent (zero before), floor the highest
	// sequence acked to its stream then: where publish looks for it.
	sent  time.Time
	floor uint64
}

func (e *streamEnv) newStream(name, subjectKey string, in StreamInput, p logformat.Parser) *stream {
	prefix := e.cfg.Instance + "." + name + "." + strconv.FormatInt(e.start, 10) + "."
	logger := e.logger.With("input", name)
	s := &stream{
		env:      e,
		name:     name,
		subject:  e.bus.HitsSubject(e.cfg.Instance, bus.Key(subjectKey)),
		idPrefix: prefix,
		header:   name + "." + strconv.FormatInt(e.start, 10),
		in:       in,
		batch:    newHitBatch(p, in.Site, e.rules, e.metrics, logger),
		logger:   logger,
		full:     e.cfg.BatchBytes - e.cfg.MaxLineBytes - 1024,
		out:      make(chan *batch),
	}
	if info := e.hits.CachedInfo(); info != nil {
		s.acked.Store(info.State.LastSeq)
	}
	return s
}

// run starts the publishers. Once ctx is done they have drain more to
// publish what was read, then give up on it (counted in lost).
func (s *stream) run(ctx context.Context, drain time.Duration) {
	s.pub, s.done = context.WithCancel(context.WithoutCancel(ctx))
	s.stop = context.AfterFunc(ctx, func() { time.AfterFunc(drain, s.done) })
	for range s.in.MaxInFlight {
		s.wg.Go(func() {
			for b := range s.out {
				if err := s.publish(s.pub, b); err != nil {
					s.lost.Add(int64(b.lines))
				}
			}
		})
	}
}

// close publishes the last batch and waits for the publishers, at most
// until the drain period after ctx ends. It returns the lines lost.
func (s *stream) close() int64 {
	s.mu.Lock()
	s.seal()
	s.closed = true
	close(s.out)
	total, batches := s.total, s.n
	s.mu.Unlock()
	s.wg.Wait()
	s.stop()
	s.done()
	lost := s.lost.Load()
	if lost > 0 {
		s.logger.Error("lines read but not published before shutdown are lost: this input cannot be read again",
			"lines", lost, "lines_read", total)
	}
	s.logger.Info("input closed", "lines_read", total, "batches", batches, "lines_lost", lost)
	return lost
}

// add consumes one line (without its newline) that took size bytes of
// the stream, publishing the batch when it is full.
func (s *stream) add(line []byte, size int) {
	s.take(line, size, len(line) > s.env.cfg.MaxLineBytes)
}

// skipLong counts a line longer than max_line_bytes that was never held
// whole: its bytes were dropped as they came, so memory stays bounded.
func (s *stream) skipLong(size int) { s.take(nil, size, true) }

func (s *stream) take(line []byte, size int, tooLong bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.env.metrics.bytes.Add(float64(size))
	if s.batch.lines == 0 {
		s.born = time.Now()
	}
	s.total++
	if tooLong {
		s.tooLong(size)
	} else {
		// The offset in the stream since this process began reading it.
		s.batch.add(line, s.offset)
	}
	s.offset += int64(size)
	if s.batch.lines >= s.env.cfg.BatchLines || s.batch.enc.Size() >= s.full {
		s.seal()
	}
}

// tooLong counts a line over max_line_bytes; called with mu held.
func (s *stream) tooLong(size int) {
	s.batch.tooLong()
	s.logger.Warn("line too long; skipped", "offset", s.offset, "bytes", size, "max_line_bytes", s.env.cfg.MaxLineBytes)
}

// flushOld publishes the batch if its first line has waited half the
// flush interval: called every half interval, no line waits longer than
// the interval.
func (s *stream) flushOld() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed && s.batch.lines > 0 && time.Since(s.born) >= s.in.FlushInterval/2 {
		s.seal()
	}
}

// seal hands the batch to a publisher and starts the next; called with mu
// held, so while every publisher is busy all adders wait: the
// backpressure. Past the drain period the batch is given up.
func (s *stream) seal() {
	if s.batch.lines == 0 {
		return
	}
	s.n++
	msg := &nats.Msg{Subject: s.subject, Data: bytes.Clone(s.batch.enc.Bytes()), Header: nats.Header{}}
	msg.Header.Set(HeaderStream, s.header)
	msg.Header.Set(HeaderStart, strconv.FormatInt(s.begin, 10))
	msg.Header.Set(HeaderEnd, strconv.FormatInt(s.offset, 10))
	msg.Header.Set(HeaderLines, strconv.Itoa(s.batch.lines))
	msg.Header.Set(jetstream.MsgIDHeader, s.idPrefix+strconv.FormatUint(s.n, 10))
	b := &batch{msg: msg, lines: s.batch.lines}
	s.batch.reset()
	s.begin = s.offset
	select {
	case s.out <- b:
	case <-s.pub.Done():
		s.lost.Add(int64(b.lines))
	}
}
