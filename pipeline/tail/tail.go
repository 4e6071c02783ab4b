// Package tail follows access-log files and publishes their page hits to
// JetStream, exactly once per line across restarts and crashes.
//
// Each file has its own subject, and each message on it carries the byte
// range of the file it covers (headers Pagewatch-Start and Pagewatch-End)
// and the file's identity. The position of a file is therefore the last
// message on its subject: a restarted tailer reads it back and continues
// there, and no position file can disagree with what was published.
// Publishes are conditional on the subject's last sequence
// (Nats-Expected-Last-Subject-Sequence), so a retried publish whose first
// attempt did land cannot add the batch twice. So that reading and
// JetStream's storing overlap, a file's batch is published while the next
// one is read, but never two at once: each publish's condition is the
// sequence the one before it got (see flight).
//
// Files move under a follower. Renamed while it runs, a file is read until
// quiet for rotate_grace, then its successor from the start; renamed while
// ingest was stopped, it is found among the path's rotated siblings (by
// inode and head, or by decompressed head once gzipped) and its rest is
// published on the same subject before the new file is read. A deleted
// file is closed once read and quiet, and its last message marked
// complete (Pagewatch-Eof). A backfill (WithBackfill, `ingest tail
// --from-start`) publishes the rotated siblings never published, each on
// a subject of its own named by its content, so it resumes where it
// stopped and a sibling is published once whatever its name becomes.
//
// A file's follower is a driver over five layers, each its own type:
//
//   - reader (reader.go): the open file and its identity, splitting what
//     it reads into lines, and telling rotation and truncation apart;
//   - position (position.go): the last message on the file's subject, and
//     the conditional publishes that move it; a pipe (pipe.go) joins a
//     reader to a position;
//   - fileLease (lease.go): the lease that keeps a file to one tailer, and
//     the record naming the subject every holder publishes on;
//   - rotatedFiles (siblings.go, siblingcopy.go): finding a file's rotated
//     siblings, again after logrotate renames them, and copying them
//     through pipes of their own; a restart after a rotation
//     (recover.go) and rotations faster than rotate_grace (rotate.go)
//     need them as much as a backfill does;
//   - inputBackfill (backfill.go): the file's part in a backfill, the
//     siblings it planned and whether the file was read to its end once.
//
// follower.go reads top to bottom: take the lease, copy what the backfill
// planned, open the file at its position, then read, publish and look at
// the path until the file changes or ctx ends.
package tail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
	"github.com/pagewatch/pagewatch/pipeline/pageview"
)

// Tailer follows the configured inputs.
type Tailer struct {
	cfg     Config
	stream  jetstream.Stream
	bus     *bus.Bus
	logger  *slog.Logger
	metrics *metrics
	parsers []logformat.Parser // one per input, compiled once
	pages   *pageview.Normalizer
	states  []*fileState // one per input, for the lag and age metrics

	env      *fileEnv         // what every file's layers share
	backfill *BackfillOptions // nil unless WithBackfill
	files    *fileSetup       // globs, leases, the files followed (files.go, lease.go)
	syslog   *syslogInput     // nil unless ingest.tail.syslog listens (syslogin.go)
	// beatEvery is the heartbeat's interval (heartbeat.go); 0: the default.
	beatEvery time.Duration
	reg       prometheus.Registerer
	rules     lineRules // how lines become hits, shared by every input

	startOnce sync.Once
	startErr  error
}

// Option is an optional part of a Tailer, given to New.
type Option func(*Tailer)

// WithBackfill makes Run backfill before it follows (`ingest tail
// --from-start`).
func WithBackfill(o BackfillOptions) Option {
	return func(t *Tailer) { t.backfill = &o }
}

// fileEnv is what the layers of every file's follower share.
type fileEnv struct {
	cfg     Config
	bus     *bus.Bus
	stream  jetstream.Stream
	metrics *metrics
	rules   lineRules
	files   *fileSetup
}

// Deps are what a Tailer works with.
type Deps struct {
	Bus      *bus.Bus
	Logger   *slog.Logger
	Registry prometheus.Registerer
	// Now is the clock a line's date is checked against (lines dated
	// ahead of it are counted and reported); nil: time.Now.
	Now func() time.Time
}

// New returns a Tailer publishing to the hits stream of d.Bus. It does no
// I/O: Start (or Run, which starts it) opens the stream, the lease
// buckets, the directory watches and the syslog listeners.
func New(cfg Config, d Deps, opts ...Option) (*Tailer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Syslog.Enabled() && len(cfg.Inputs) == 0 {
		return nil, errors.New("ingest.tail: nothing to follow: inputs is empty and syslog has no listen_udp or listen_tcp (ingest.tail.stdin is read only by `ingest tail --stdin`)")
	}
	parsers := make([]logformat.Parser, len(cfg.Inputs))
	for i, in := range cfg.Inputs {
		var err error
		if parsers[i], _, err = in.parser(); err != nil {
			return nil, fmt.Errorf("ingest.tail.inputs[%d].%w", i, err)
		}
	}
	pages, err := pageview.New(cfg.Pages)
	if err != nil {
		return nil, err
	}
	states := make([]*fileState, len(cfg.Inputs))
	for i, in := range cfg.Inputs {
		states[i] = &fileState{path: in.Path, site: in.Site}
	}
	t := &Tailer{
		states:  states,
		pages:   pages,
		cfg:     cfg,
		bus:     d.Bus,
		logger:  d.Logger,
		reg:     d.Registry,
		metrics: newMetrics(d.Registry),
		parsers: parsers,
		rules:   newLineRules(cfg, pages, d.Bus, d.Registry).withClock(d.Now),
	}
	for _, o := range opts {
		o(t)
	}
	t.files = t.newFileSetup(d.Registry)
	return t, nil
}

// Start opens what the Tailer needs: the hits stream, the file leases and
// records, the watches of the globs' directories, and the syslog
// listeners. Run starts it if need be; call it first to learn the
// listeners' addresses (SyslogAddrs). It is done once.
func (t *Tailer) Start(ctx context.Context) error {
	t.startOnce.Do(func() { t.startErr = t.start(ctx) })
	return t.startErr
}

func (t *Tailer) start(ctx context.Context) error {
	stream, err := t.bus.HitsStream(ctx)
	if err != nil {
		return err
	}
	t.stream = stream
	if err := t.files.open(ctx, t.cfg, t.bus, t.logger, t.reg); err != nil {
		return err
	}
	t.env = &fileEnv{cfg: t.cfg, bus: t.bus, stream: stream, metrics: t.metrics, rules: t.rules, files: t.files}
	return t.listenSyslog(t.reg)
}

// Run follows every input until ctx is done (with BackfillOptions.Only,
// until every input has been read to its end). Lines read but not yet
// published when it stops are read again by the next run.
func (t *Tailer) Run(ctx context.Context) error {
	if err := t.Start(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	files, err := t.startFiles(ctx, cancel)
	if err != nil {
		return err
	}
	waitSyslog := t.startSyslog(ctx, cancel)
	waitBeat := t.startHeartbeat(ctx)
	err = errors.Join(files.wait(), waitSyslog())
	cancel() // a Run ended by a failure stops its heartbeat too
	waitBeat()
	return err
}
