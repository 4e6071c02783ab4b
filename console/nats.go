package console

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/pipeline/ledger"
	"github.com/pagewatch/pagewatch/pipeline/sweep/pagestate"
)

// NATS reads dead letters, the pipeline's streams and the sweeper's
// state straight from JetStream, and puts dead letters back.
type NATS struct {
	b      *bus.Bus
	states *pagestate.Reader
	// buckets are the buckets opened so far, by name: opening one asks
	// the server for its stream's info, and /rules reads a state per page.
	buckets sync.Map
}

// NewNATS reads through b.
func NewNATS(b *bus.Bus) *NATS { return &NATS{b: b, states: pagestate.NewReader(b)} }

// bucket opens an existing bucket; ok is false when no daemon made it yet.
func (n *NATS) bucket(ctx context.Context, name string) (jetstream.KeyValue, bool, error) {
	if kv, ok := n.buckets.Load(name); ok {
		return kv.(jetstream.KeyValue), true, nil
	}
	kv, err := n.b.JS.KeyValue(ctx, n.b.BucketName(name))
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("open bucket %s: %w", name, err)
	}
	n.buckets.Store(name, kv) // not a bucket not made yet: that is asked again
	return kv, true, nil
}

// deadScanMax bounds the sequence numbers List looks at: deleted dead
// letters leave gaps it steps over.
const deadScanMax = 5000

// List returns the newest dead letters first.
func (n *NATS) List(ctx context.Context, limit int) ([]DeadLetter, error) {
	st, err := n.b.JS.Stream(ctx, n.b.DeadLetterStreamName())
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dead-letter stream: %w", err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("dead-letter stream info: %w", err)
	}
	var out []DeadLetter
	first, last := info.State.FirstSeq, info.State.LastSeq
	if info.State.Msgs == 0 {
		return nil, nil
	}
	for seq, looked := last, 0; seq >= first && seq > 0 && len(out) < limit && looked < deadScanMax; seq, looked = seq-1, looked+1 {
		m, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("dead letter %d: %w", seq, err)
		}
		out = append(out, n.describe(m))
	}
	return out, nil
}

func (n *NATS) describe(m *jetstream.RawStreamMsg) DeadLetter {
	d := DeadLetter{Seq: m.Sequence, At: m.Time, Bytes: len(m.Data),
		Kind:     m.Subject[strings.LastIndexByte(m.Subject, '.')+1:],
		Reason:   m.Header.Get(bus.HeaderDeadReason),
		Subject:  m.Header.Get(bus.HeaderDeadSubject),
		Receiver: m.Header.Get(bus.HeaderDeadReceiver)}
	if d.Kind == "jobs" {
		var x crossing.Crossing
		if json.Unmarshal(m.Data, &x) == nil {
			d.Key, d.Rule, d.Site, d.Path = x.Key, x.Rule, x.Site, x.Path
		}
	}
	return d
}

func (n *NATS) get(ctx context.Context, seq uint64) (jetstream.Stream, *jetstream.RawStreamMsg, error) {
	st, err := n.b.JS.Stream(ctx, n.b.DeadLetterStreamName())
	if err != nil {
		return nil, nil, fmt.Errorf("dead-letter stream: %w", err)
	}
	m, err := st.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil, errors.New("no such dead letter (already retried or discarded?)")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("dead letter %d: %w", seq, err)
	}
	return st, m, nil
}

// Discard deletes a dead letter.
func (n *NATS) Discard(ctx context.Context, seq uint64) (DeadLetter, error) {
	st, m, err := n.get(ctx, seq)
	if err != nil {
		return DeadLetter{}, err
	}
	d := n.describe(m)
	if err := st.DeleteMsg(ctx, seq); err != nil {
		return d, fmt.Errorf("delete dead letter %d: %w", seq, err)
	}
	return d, nil
}

// Retry puts a dead letter back and deletes it. A job goes back on its
// page's subject after its receiver's entry in the sent ledger is
// removed (the entry that says "dead-lettered", which would make the
// worker skip it); the job's other receivers keep theirs, so only the
// failed delivery is made again. A hits batch goes on a subject of its
// own under the hits stream, never on a tailer's subject, whose last
// message is that tailer's position.
func (n *NATS) Retry(ctx context.Context, seq uint64) (DeadLetter, error) {
	st, m, err := n.get(ctx, seq)
	if err != nil {
		return DeadLetter{}, err
	}
	d := n.describe(m)
	out := nats.NewMsg("")
	out.Data = m.Data
	switch d.Kind {
	case "jobs":
		var x crossing.Crossing
		if err := json.Unmarshal(m.Data, &x); err != nil || x.Key == "" {
			// err is nil when the job decoded without a key: %v, not %w.
			return d, fmt.Errorf("dead letter %d holds no job: %v", seq, err) //nolint:errorlint // err may be nil
		}
		if !strings.HasPrefix(d.Subject, n.b.JobsSubjectPrefix()) {
			return d, fmt.Errorf("dead letter %d came from %q, not a jobs subject", seq, d.Subject)
		}
		if d.Receiver != "" {
			if err := ledger.New(n.b).Forget(ctx, x.Key, d.Receiver); err != nil {
				return d, err
			}
		}
		out.Subject = d.Subject
	case "hits":
		for k, v := range m.Header {
			out.Header[k] = v
		}
		for _, h := range []string{bus.HeaderDeadReason, bus.HeaderDeadSubject, bus.HeaderDeadSeq, bus.HeaderDeadReceiver} {
			out.Header.Del(h)
		}
		out.Subject = n.b.HitsSubject("console-retry", fmt.Sprint(seq))
	default:
		return d, fmt.Errorf("dead letter %d is of an unknown kind %q", seq, d.Kind)
	}
	// The retry's own ID: the job's first ID (its crossing key) may still
	// be in the stream's duplicate window.
	out.Header.Set(nats.MsgIdHdr, fmt.Sprintf("console-retry.%d.%d", seq, time.Now().UnixNano()))
	if _, err := n.b.JS.PublishMsg(ctx, out); err != nil {
		return d, fmt.Errorf("republish dead letter %d to %s: %w", seq, out.Subject, err)
	}
	if err := st.DeleteMsg(ctx, seq); err != nil {
		return d, fmt.Errorf("republished, but deleting dead letter %d failed (it may be retried twice): %w", seq, err)
	}
	return d, nil
}

// Pipeline reads the streams, the consumers, the tailed files' last
// messages, the worker locks and the sweeper's progress.
func (n *NATS) Pipeline(ctx context.Context) (PipelineState, error) {
	var ps PipelineState
	for _, name := range []string{n.b.HitsStreamName(), n.b.JobsStreamName(), n.b.DeadLetterStreamName()} {
		st, err := n.b.JS.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return ps, fmt.Errorf("stream %s: %w", name, err)
		}
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(n.b.HitsSubjectFilter()))
		if err != nil {
			return ps, fmt.Errorf("stream %s info: %w", name, err)
		}
		ps.Streams = append(ps.Streams, StreamState{Name: name, Messages: info.State.Msgs, Bytes: info.State.Bytes,
			LastSeq: info.State.LastSeq, LastAt: info.State.LastTime})
		var ackFloor uint64
		lister := st.ListConsumers(ctx)
		for c := range lister.Info() {
			ps.Consumers = append(ps.Consumers, ConsumerState{Stream: name, Name: c.Name, Pending: c.NumPending,
				AckPending: c.NumAckPending, Redelivered: c.NumRedelivered, AckFloor: c.AckFloor.Stream})
			if name == n.b.HitsStreamName() && (ackFloor == 0 || c.AckFloor.Stream < ackFloor) {
				ackFloor = c.AckFloor.Stream
			}
		}
		if err := lister.Err(); err != nil {
			return ps, fmt.Errorf("consumers of %s: %w", name, err)
		}
		if name == n.b.HitsStreamName() {
			files, err := n.files(ctx, st, info, ackFloor)
			if err != nil {
				return ps, err
			}
			ps.Files = files
		}
	}
	if locks, ok, err := n.bucket(ctx, bus.BucketLocks); err != nil {
		return ps, err
	} else if ok {
		keys, err := locks.ListKeys(ctx)
		if err != nil {
			return ps, fmt.Errorf("locks bucket: %w", err)
		}
		for range keys.Keys() {
			ps.Locks++
		}
	}
	if to, ok, err := n.states.Progress(ctx); err != nil {
		return ps, err
	} else if ok {
		ps.SweptTo = to
	}
	return ps, n.operator(ctx, &ps)
}

// maxFiles bounds the tailed files listed.
const maxFiles = 200

// files are the hits stream's subjects (one per tailed file) with their
// last message: how far each file was published, and whether the
// loaders have acknowledged up to it.
func (n *NATS) files(ctx context.Context, st jetstream.Stream, info *jetstream.StreamInfo, ackFloor uint64) ([]FileState, error) {
	var out []FileState
	for subj := range info.State.Subjects {
		if len(out) >= maxFiles {
			break
		}
		m, err := st.GetLastMsgForSubject(ctx, subj)
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue
			}
			return nil, fmt.Errorf("last message of %s: %w", subj, err)
		}
		out = append(out, FileState{Subject: subj, LastAt: m.Time, LastSeq: m.Sequence, Loaded: ackFloor >= m.Sequence})
	}
	return out, nil
}

// State reads the sweeper's state of one rule and page, through the
// sweep's own reader.
func (n *NATS) State(ctx context.Context, rule, site, path string, sum bool) (RuleState, bool, error) {
	st, ok, err := n.states.Read(ctx, rule, site, path, sum)
	if err != nil || !ok {
		return RuleState{}, ok, err
	}
	rs := RuleState{Fired: st.Fired, Window: st.Window, LastFired: st.LastFired,
		Open: st.Open != nil, Pending: st.Pending}
	if st.Open != nil {
		rs.OpenSince = st.Open.Since
	}
	if st.Held != nil {
		rs.Held = cmp.Or(st.Held.Reason, "held by the client guard")
	}
	rs.Level = st.Raised
	return rs, true, nil
}
