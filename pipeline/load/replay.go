package load

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// NewReplay returns a Loader that loads every hit JetStream still holds
// from the given time on (the zero time: everything) and whose Run returns
// once it has loaded all that was in the stream when it started. It is
// how ClickHouse is rebuilt: loading a hit again changes no count, so a
// replay over data that is already there, or an interrupted replay run
// again, is harmless. It uses a consumer of its own and leaves the shared
// one, and the loaders using it, alone.
func NewReplay(cfg Config, d Deps, from time.Time) (*Loader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := newLoader(cfg, d)
	l.open = func(ctx context.Context) error { return l.openReplay(ctx, from) }
	return l, nil
}

// openReplay is a replay's first step: an ephemeral consumer from the
// given time, and the stream's last sequence as where it ends.
func (l *Loader) openReplay(ctx context.Context, from time.Time) error {
	cfg, b, logger := l.cfg, l.bus, l.logger
	if err := l.openStreams(ctx); err != nil {
		return err
	}
	info, err := l.stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream %s: %w", b.HitsStreamName(), err)
	}
	target := info.State.LastSeq
	cc := jetstream.ConsumerConfig{
		Description:   "pagewatch replay into ClickHouse",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxAckPending: cfg.maxAckPending(),
		MaxDeliver:    -1,
		// Ephemeral: the server removes it once the replay stops asking.
		InactiveThreshold: max(time.Minute, 2*cfg.AckWait),
		DeliverPolicy:     jetstream.DeliverAllPolicy,
	}
	if !from.IsZero() {
		cc.DeliverPolicy = jetstream.DeliverByStartTimePolicy
		cc.OptStartTime = &from
	}
	cons, err := l.stream.CreateConsumer(ctx, cc)
	if err != nil {
		return fmt.Errorf("create replay consumer: %w", err)
	}
	l.setConsumer(cons)
	logger.Info("replaying hits", "stream", b.HitsStreamName(), "from", fromText(from), "up_to_sequence", target, "messages_in_stream", info.State.Msgs)
	l.done = func(ctx context.Context) (bool, error) {
		ci, err := l.consumer().Info(ctx)
		if err != nil {
			return false, err
		}
		// Everything up to the target acknowledged, or nothing there to
		// deliver (a start time after the last message, an empty stream).
		finished := ci.AckFloor.Stream >= target || ci.NumPending == 0 && ci.NumAckPending == 0 && ci.Delivered.Stream >= target
		if finished {
			logger.Info("replay finished", "up_to_sequence", target, "acked_floor", ci.AckFloor.Stream)
		}
		return finished, nil
	}
	return nil
}

func fromText(t time.Time) string {
	if t.IsZero() {
		return "the stream's start"
	}
	return t.UTC().Format(time.RFC3339)
}

// ParseReplayFrom reads --replay-from: "start" (everything JetStream
// holds), an RFC 3339 time, or a duration meaning that long before now.
func ParseReplayFrom(s string, now time.Time) (time.Time, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "start", "beginning", "all":
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf(`--replay-from: want "start", an RFC 3339 time (2026-11-22T08:00:00Z) or a duration ago (24h), got %q`, s)
}
