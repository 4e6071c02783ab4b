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
// complete (Pagewatch-Eof). A backfill (SetBackfill, `ingest tail
// --from-start`) publishes the rotated siblings never published, each on
// a subject of its own named by its content, so it resumes where it
// stopped and a sibling is published once whatever its name becomes.
package tail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

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

	backfillOpts *BackfillOptions // nil unless SetBackfill was called
	files        fileSetup        // globs, leases (files.go, lease.go)
	syslog       *syslogInput     // nil unless ingest.tail.syslog listens (syslogin.go)
}

// New returns a Tailer publishing to the hits stream of b.
func New(ctx context.Context, cfg Config, b *bus.Bus, logger *slog.Logger, reg prometheus.Registerer) (*Tailer, error) {
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
	if err := t.setupFiles(ctx, reg); err != nil {
		return nil, err
	}
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
	return errors.Join(files.wait(), waitSyslog())
}

func (t *Tailer) newFollower(in Input, p logformat.Parser, state *fileState) *follower {
	logger := t.logger.With("file", in.Path)
	return &follower{
		Tailer:    t,
		in:        in,
		batch:     newHitBatch(p, in.Site, t.pages, t.metrics, logger),
		state:     state,
		subject:   t.bus.HitsSubject(t.cfg.Instance, bus.Key(in.Path)),
		logger:    logger,
		keepalive: t.bus.HitsMaxAge() / 4,
	}
}
