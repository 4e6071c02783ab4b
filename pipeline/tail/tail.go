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

// New returns a Tailer publishing to the hits stream of b.
func New(ctx context.Context, cfg Config, b *bus.Bus, logger *slog.Logger, reg prometheus.Registerer, opts ...Option) (*Tailer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	stream, err := b.HitsStream(ctx)
	if err != nil {
		return nil, err
	}
	parsers := make([]logformat.Parser, len(cfg.Inputs))
	for i, in := range cfg.Inputs {
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
		states[i] = &fileState{path: in.Path}
	}
	t := &Tailer{
		states:  states,
		pages:   pages,
		cfg:     cfg,
		stream:  stream,
		bus:     b,
		logger:  logger,
		metrics: newMetrics(reg),
		parsers: parsers,
	}
	for _, o := range opts {
		o(t)
	}
	if t.files, err = t.setupFiles(ctx, reg); err != nil {
		return nil, err
	}
	t.env = &fileEnv{cfg: cfg, bus: b, stream: stream, metrics: t.metrics, rules: newLineRules(cfg, pages, b, reg), files: t.files}
	if err := t.listenSyslog(reg); err != nil {
		return nil, err
	}
	return t, nil
}

// Run follows every input until ctx is done (with BackfillOptions.Only,
// until every input has been read to its end). Lines read but not yet
// published when it stops are read again by the next run.
func (t *Tailer) Run(ctx context.Context) error {
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
