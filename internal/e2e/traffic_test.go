package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/realdata"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/pipeline/load"
	"github.com/pagewatch/pagewatch/pipeline/logformat"
)

// The loader tests publish straight to JetStream what ingest tail would:
// real hits, one subject per file, messages cut as the tailer cuts them
// with its default settings (5,000 lines, or about 447 KiB encoded, which
// real lines with their user agents reach first, at about 2,400 hits).
const (
	site             = "example.com"
	tailerBatchLines = 5000
	tailerBatchFull  = 512<<10 - 64<<10 - 1024 // batch_bytes - max_line_bytes - 1 KiB
)

// bigLoad is the loader configuration the defaults give, except ack_wait:
// at its minimum, a killed loader's batch goes to another loader sooner.
var bigLoad = loadConfig{BatchRows: 100_000, BatchAge: "1s", AckWait: "5s"}

// trafficLine is one line of the real log as the tailer would publish it.
type trafficLine struct {
	rel  int64  // seconds after the log's earliest line
	size uint64 // bytes in the file, newline included
	hit  hit.Hit
}

// traffic is the real log, replayed as often as needed: n hits in
// timestamp order, each pass over the log compressed so the n hits span
// [base, base+span), which keeps the log's daily shape.
type traffic struct {
	lines  []trafficLine
	period int64 // seconds covered by one pass over the log
	n      int
	files  int // hits go round-robin to this many files (subjects)
	base   time.Time
	span   time.Duration
	// cutoff is a minute boundary in the middle of the span: pages are
	// also checked for their count since it, as a rolling window reads them.
	cutoff time.Time
}

func newTraffic(t *testing.T, n, files int, span time.Duration) *traffic {
	t.Helper()
	var e logformat.Entry
	tr := &traffic{n: n, files: files, span: span}
	first, last := int64(1<<62), int64(0)
	for i, l := range realdata.Lines(t, realdata.ApacheLog) {
		if err := logformat.Parse(l, &e); err != nil {
			t.Fatalf("real log line %d: %v", i+1, err)
		}
		path, ok := pagePath(e.Target)
		if len(e.Method) == 0 || !ok {
			t.Fatalf("real log line %d is not a page view: %s", i+1, l)
		}
		h := hit.Hit{Site: site, Path: path, Method: string(e.Method), Status: uint16(e.Status),
			Referer: string(e.Referer)}
		if e.Bytes > 0 {
			h.Bytes = uint64(e.Bytes)
		}
		unix := e.Time.Unix()
		first, last = min(first, unix), max(last, unix)
		tr.lines = append(tr.lines, trafficLine{rel: unix, size: uint64(len(l)) + 1, hit: h})
	}
	for i := range tr.lines {
		tr.lines[i].rel -= first
	}
	tr.period = last - first + 1
	// Recent enough for any retention, old enough to be wholly in the past.
	tr.base = time.Now().UTC().Add(-6 * time.Hour).Truncate(time.Minute)
	tr.cutoff = tr.base.Add(span / 2).Truncate(time.Minute)
	return tr
}

// pagePath is the path ingest tail records for a request target: without
// query or fragment, absolute-form reduced to its path, capped at 1 KiB.
func pagePath(target []byte) (string, bool) {
	if i := bytes.IndexAny(target, "?#"); i >= 0 {
		target = target[:i]
	}
	for _, scheme := range []string{"http://", "https://"} {
		if rest, ok := bytes.CutPrefix(target, []byte(scheme)); ok {
			if i := bytes.IndexByte(rest, '/'); i >= 0 {
				target = rest[i:]
			} else {
				target = []byte("/")
			}
		}
	}
	if len(target) == 0 || target[0] != '/' {
		return "", false
	}
	return string(target[:min(len(target), 1024)]), true
}

// pageCounts is what was published per page: all time, and since cutoff.
type pageCounts struct {
	all, recent map[string]int
}

// messages encodes the traffic and calls emit for each message in the
// order a set of tailers could publish them; data is valid until emit
// returns. It returns the hits per page.
func (tr *traffic) messages(emit func(file, hits int, data []byte) error) (pageCounts, error) {
	counts := pageCounts{all: map[string]int{}, recent: map[string]int{}}
	encs := make([]hit.Encoder, tr.files)
	offsets := make([]uint64, tr.files)
	passes := int64((tr.n + len(tr.lines) - 1) / len(tr.lines))
	total := passes * tr.period
	spanSec := int64(tr.span / time.Second)
	cutoff := tr.cutoff.Unix()
	for g := 0; g < tr.n; g++ {
		pass, l := int64(g/len(tr.lines)), &tr.lines[g%len(tr.lines)]
		f := g % tr.files
		h := l.hit
		h.Time = tr.base.Add(time.Duration((pass*tr.period+l.rel)*spanSec/total) * time.Second)
		h.Offset = offsets[f]
		offsets[f] += l.size
		encs[f].Add(&h)
		counts.all[h.Path]++
		if h.Time.Unix() >= cutoff {
			counts.recent[h.Path]++
		}
		if encs[f].Len() >= tailerBatchLines || encs[f].Size() >= tailerBatchFull {
			if err := emit(f, encs[f].Len(), encs[f].Bytes()); err != nil {
				return counts, err
			}
			encs[f].Reset()
		}
	}
	for f := range encs {
		if encs[f].Len() > 0 {
			if err := emit(f, encs[f].Len(), encs[f].Bytes()); err != nil {
				return counts, err
			}
		}
	}
	return counts, nil
}

// hitsBus connects to the bundle's NATS as the daemons do and declares the
// hits stream with the daemons' settings.
func (b *bundle) hitsBus(t *testing.T) *bus.Bus {
	t.Helper()
	cfg := bus.DefaultConfig()
	cfg.URL = b.natsURL()
	cfg.Replicas = b.natsReplicas()
	bb, err := bus.Connect(context.Background(), cfg, "e2e publisher",
		slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bb.Close)
	if _, err := bb.HitsStream(context.Background()); err != nil {
		t.Fatal(err)
	}
	return bb
}

// loadProgress follows the loaders' shared consumer.
type loadProgress struct {
	bb        *bus.Bus
	published atomic.Int64 // messages the stream acknowledged
	done      atomic.Int64 // messages acknowledged by the loaders, about
	// release, when above 0, holds publish back at that many messages,
	// so a test can keep work for the loaders until it chooses.
	release atomic.Int64
}

// backlog is the consumer's undelivered and unacknowledged message counts;
// ok is false before a loader created the consumer.
func (p *loadProgress) backlog(ctx context.Context) (pending uint64, ackPending int, ok bool) {
	cons, err := p.bb.JS.Consumer(ctx, p.bb.HitsStreamName(), load.DefaultConfig().Consumer)
	if err != nil {
		return 0, 0, false
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return 0, 0, false
	}
	return info.NumPending, info.NumAckPending, true
}

// watch updates done every 25 ms until ctx ends.
func (p *loadProgress) watch(ctx context.Context) {
	for ctx.Err() == nil {
		published := p.published.Load()
		if pending, ackPending, ok := p.backlog(ctx); ok {
			p.done.Store(max(0, published-int64(pending)-int64(ackPending)))
		}
		select {
		case <-ctx.Done():
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// publish sends the traffic with up to 16 publishes awaiting their acks,
// staying at most ahead messages ahead of the loaders (0: no limit). A
// publish that fails is retried under the same message ID, which the
// stream deduplicates, so every message is stored exactly once.
func (p *loadProgress) publish(ctx context.Context, tr *traffic, ahead int64) (pageCounts, error) {
	type inflight struct {
		f    jetstream.PubAckFuture
		subj string
		id   string
		data []byte
	}
	var queue []inflight
	settle := func(x inflight) error {
		var err error
		select {
		case <-x.f.Ok():
			p.published.Add(1)
			return nil
		case err = <-x.f.Err():
		case <-time.After(30 * time.Second):
			err = errors.New("no ack in 30s")
		}
		for attempt := 0; attempt < 5; attempt++ {
			m := nats.NewMsg(x.subj)
			m.Data = x.data
			if _, err = p.bb.JS.PublishMsg(ctx, m, jetstream.WithMsgID(x.id)); err == nil {
				p.published.Add(1)
				return nil
			}
			time.Sleep(200 * time.Millisecond)
		}
		return fmt.Errorf("publish %s: %w", x.id, err)
	}
	n := 0
	counts, err := tr.messages(func(file, hits int, data []byte) error {
		for (ahead > 0 && int64(n)-p.done.Load() > ahead) || (p.release.Load() > 0 && int64(n) >= p.release.Load()) {
			// Settle what is in flight before waiting: published counts
			// only settled messages, and the wait may be long.
			for _, x := range queue {
				if err := settle(x); err != nil {
					return err
				}
			}
			queue = queue[:0]
			if err := ctx.Err(); err != nil {
				return err
			}
			time.Sleep(10 * time.Millisecond)
		}
		if len(queue) == 16 {
			if err := settle(queue[0]); err != nil {
				return err
			}
			queue = queue[1:]
		}
		x := inflight{subj: p.bb.HitsSubject("e2e", "file"+strconv.Itoa(file)), id: "e2e-" + strconv.Itoa(n), data: slices.Clone(data)}
		m := nats.NewMsg(x.subj)
		m.Data = x.data
		f, err := p.bb.JS.PublishMsgAsync(m, jetstream.WithMsgID(x.id))
		if err != nil {
			return fmt.Errorf("publish %s: %w", x.id, err)
		}
		x.f = f
		queue = append(queue, x)
		n++
		return nil
	})
	for _, x := range queue {
		if err == nil {
			err = settle(x)
		}
	}
	return counts, err
}

// waitDrained waits until every published message was acknowledged by a
// loader, which acks only after its insert.
func (p *loadProgress) waitDrained(t *testing.T, timeout time.Duration) {
	t.Helper()
	testcheck.Eventually(t, timeout, "the loaders to acknowledge every message", func() error {
		pending, ackPending, ok := p.backlog(context.Background())
		if ok && pending == 0 && ackPending == 0 {
			return nil
		}
		return fmt.Errorf("the loaders still have %d messages to fetch and %d unacknowledged (consumer found: %v)", pending, ackPending, ok)
	})
}
