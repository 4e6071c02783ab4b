package console

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/pipeline/sweep/sweepstatus"
	"github.com/pagewatch/pagewatch/pipeline/tail/tailstatus"
)

// OperatorState is what the daemons report of themselves, beside what
// JetStream's own state says (PipelineState's other fields): the
// tailers' heartbeats, the last sweeps, how long the oldest message
// each consumer has yet to finish has waited, and the jobs held for
// quiet hours per receiver.
type OperatorState struct {
	Tailers []tailstatus.Tailer `json:"tailers"`
	Sweep   sweepstatus.Status  `json:"sweep"`
	// Oldest is, per consumer ("<stream>/<consumer>"), when the oldest
	// message it has not acknowledged was stored; absent when none waits.
	Oldest map[string]time.Time `json:"oldest_unacked"`
	// Held are the crossings held in quiet hours, per receiver.
	Held map[string]int `json:"held"`
}

// maxHeld bounds the held keys counted.
const maxHeld = 10_000

// operator reads the OperatorState into ps. It runs after the streams
// and consumers are read: the oldest message a consumer has not
// acknowledged is the first one after its acknowledgement floor.
func (n *NATS) operator(ctx context.Context, ps *PipelineState) error {
	op := &ps.Operator
	op.Oldest, op.Held = map[string]time.Time{}, map[string]int{}
	var err error
	if op.Tailers, err = tailstatus.Read(ctx, n.b); err != nil {
		return err
	}
	if op.Sweep, err = sweepstatus.Read(ctx, n.b); err != nil {
		return err
	}
	for _, c := range ps.Consumers {
		if c.Pending == 0 && c.AckPending == 0 {
			continue
		}
		key := c.Stream + "/" + c.Name
		at, ok, err := n.firstAfter(ctx, c.Stream, c.AckFloor)
		if err != nil {
			return err
		}
		if ok {
			op.Oldest[key] = at
		}
	}
	held, ok, err := n.bucket(ctx, bus.BucketHeld)
	if err != nil || !ok {
		return err
	}
	keys, err := held.ListKeys(ctx)
	if err != nil {
		return fmt.Errorf("held bucket: %w", err)
	}
	count := 0
	for k := range keys.Keys() {
		if count++; count > maxHeld {
			_ = keys.Stop()
			break
		}
		// heldKey in pipeline/notify: receiver "." hashed crossing key.
		if i := strings.LastIndexByte(k, '.'); i > 0 {
			op.Held[k[:i]]++
		}
	}
	return nil
}

// firstAfter returns when the first message after seq in the stream was
// stored (messages deleted or aged out are stepped over).
func (n *NATS) firstAfter(ctx context.Context, stream string, seq uint64) (time.Time, bool, error) {
	st, err := n.b.JS.Stream(ctx, stream)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("stream %s: %w", stream, err)
	}
	m, err := st.GetMsg(ctx, seq+1, jetstream.WithGetMsgSubject(">"))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("stream %s message after %d: %w", stream, seq, err)
	}
	return m.Time, true, nil
}
