package tail

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/pipeline/tail/tailstatus"
)

// WithHeartbeat sets how often the tailer writes its record to the
// tailers bucket (tailstatus.Interval unless given; the bucket's TTL is
// six of them). Tests shorten it to see a record expire.
func WithHeartbeat(every time.Duration) Option {
	return func(t *Tailer) { t.beatEvery = every }
}

// heartbeat writes what a tailer knows of its inputs to NATS KV every
// few seconds, for the console: the real path of each file, its size,
// how far it is stored and when a batch of it last was. The metrics say
// the same to Prometheus, by file label; the console has no Prometheus,
// and needs the tailers that died too, which the record's age tells.
type heartbeat struct {
	kv     *bus.LazyKV
	key    string
	rec    tailstatus.Tailer // what stays the same between beats
	inputs func() []tailstatus.Input
	logger *slog.Logger
	failed bool // the last write failed: warned once, until one succeeds
}

// startHeartbeat writes the tailer's record now and every beatEvery
// until ctx is done, then a last one saying it stopped. wait returns
// once that is written (or has failed). A backfill-only run, which ends
// by itself, writes none.
func (t *Tailer) startHeartbeat(ctx context.Context) (wait func()) {
	if t.backfill != nil && t.backfill.Only {
		return func() {}
	}
	every := t.beatEvery
	if every <= 0 {
		every = tailstatus.Interval
	}
	host := t.files.self.host
	version := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = bi.Main.Version
	}
	h := &heartbeat{
		kv:  t.bus.Lazy(tailstatus.Bucket, 6*every),
		key: tailstatus.Key(t.cfg.Instance, host),
		rec: tailstatus.Tailer{Instance: t.cfg.Instance, Host: host, PID: os.Getpid(), Version: version,
			Started: time.Now(), Interval: every},
		inputs: t.inputStatus,
		logger: t.logger,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			h.beat(ctx, false)
			select {
			case <-ctx.Done():
				// The last record outlives ctx: it says the tailer was
				// stopped, not lost, until the TTL removes it.
				last, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
				h.beat(last, true)
				cancel()
				return
			case <-tick.C:
			}
		}
	}()
	return func() { <-done }
}

// beat writes one record. A failure is logged and the next beat tries
// again: NATS away is what the record's age shows the console.
func (h *heartbeat) beat(ctx context.Context, stopped bool) {
	rec := h.rec
	rec.At, rec.Stopped, rec.Inputs = time.Now(), stopped, h.inputs()
	body, err := json.Marshal(rec)
	if err == nil {
		var kv jetstream.KeyValue
		if kv, err = h.kv.Get(ctx); err == nil {
			_, err = kv.Put(ctx, h.key, body)
		}
	}
	switch {
	case err != nil && !h.failed && ctx.Err() == nil:
		h.failed = true
		h.logger.Warn("writing the tailer's heartbeat failed; retrying each beat (the console will show this tailer silent)", "err", err)
	case err == nil && h.failed:
		h.failed = false
		h.logger.Info("tailer's heartbeat written again")
	}
}

// inputStatus is what the heartbeat says of every input followed now:
// the literal inputs, the files the globs found, and the syslog streams.
func (t *Tailer) inputStatus() []tailstatus.Input {
	var states []*fileState
	for i, in := range t.cfg.Inputs {
		if !isGlob(in.Path) {
			states = append(states, t.states[i])
		}
	}
	states = append(states, t.files.globStates()...)
	out := make([]tailstatus.Input, 0, len(states))
	for _, s := range states {
		out = append(out, s.status())
	}
	if t.syslog != nil {
		for _, name := range slices.Sorted(maps.Keys(t.syslog.streams)) {
			out = append(out, t.syslog.streams[name].status())
		}
	}
	return out
}

func (s *fileState) status() tailstatus.Input {
	size, offset := s.size.Load(), s.offset.Load()
	return tailstatus.Input{Kind: tailstatus.KindFile, Name: absPath(s.path), Site: s.site, Size: size, Offset: offset,
		Behind: max(size-offset, 0), LastPublish: unixNano(s.lastPublish.Load()),
		UnpublishedSince: unixNano(s.since.Load()), Lines: s.lines.Load(), Standby: s.standby.Load()}
}

func (s *stream) status() tailstatus.Input {
	s.mu.Lock()
	offset, lines := s.offset, s.total
	s.mu.Unlock()
	return tailstatus.Input{Kind: tailstatus.KindStream, Name: s.name, Site: s.in.Site, Offset: offset,
		LastPublish: unixNano(s.lastPublish.Load()), Lines: lines}
}

func unixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}
