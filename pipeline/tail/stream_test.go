package tail_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/pipeline/pageview"
	"github.com/pagewatch/pagewatch/pipeline/tail"
)

// streamMsg is one message of a non-file input, decoded.
type streamMsg struct {
	seq        uint64
	stream, id string
	start, end int64
	hits       []hit.Hit
}

// streamMsgs reads every message on the subject of key ("stdin",
// "syslog") and groups them by Pagewatch-Stream, each group sorted by
// byte range. It fails on what exactly-once rules out: a message ID
// stored twice, byte ranges of one stream that overlap or leave a gap,
// and an offset published twice.
func (b *bundle) streamMsgs(t testing.TB, key string) map[string][]streamMsg {
	t.Helper()
	ctx := context.Background()
	s, err := b.bus.JS.Stream(ctx, b.bus.HitsStreamName())
	if err != nil {
		t.Fatal(err)
	}
	subject := b.bus.HitsSubject(b.cfg.Instance, bus.Key(key))
	out := map[string][]streamMsg{}
	ids := map[string]bool{}
	for seq := uint64(1); ; {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seq = m.Sequence + 1
		hs, err := hit.Decode(m.Data, nil)
		if err != nil {
			t.Fatalf("message %d: %v", m.Sequence, err)
		}
		sm := streamMsg{seq: m.Sequence, stream: m.Header.Get(tail.HeaderStream), id: m.Header.Get(jetstream.MsgIDHeader), hits: hs}
		sm.start, _ = strconv.ParseInt(m.Header.Get(tail.HeaderStart), 10, 64)
		sm.end, _ = strconv.ParseInt(m.Header.Get(tail.HeaderEnd), 10, 64)
		if ids[sm.id] || sm.stream == "" || m.Header.Get(tail.HeaderFile) != "" {
			t.Fatalf("message %d: id %q (seen before: %v), stream %q, file %q", m.Sequence, sm.id, ids[sm.id], sm.stream, m.Header.Get(tail.HeaderFile))
		}
		ids[sm.id] = true
		out[sm.stream] = append(out[sm.stream], sm)
	}
	for name, msgs := range out {
		sort.Slice(msgs, func(i, j int) bool { return msgs[i].start < msgs[j].start })
		var end int64
		seen := map[uint64]bool{}
		for _, m := range msgs {
			if m.start != end {
				t.Fatalf("%s: message %d covers [%d, %d) but the one before ends at %d", name, m.seq, m.start, m.end, end)
			}
			end = m.end
			for _, h := range m.hits {
				if seen[h.Offset] || int64(h.Offset) < m.start || int64(h.Offset) >= m.end {
					t.Fatalf("%s: message %d [%d, %d): offset %d out of range or published twice", name, m.seq, m.start, m.end, h.Offset)
				}
				seen[h.Offset] = true
			}
		}
	}
	return out
}

// hitsOf is every hit of msgs.
func hitsOf(msgs []streamMsg) []hit.Hit {
	var hs []hit.Hit
	for _, m := range msgs {
		hs = append(hs, m.hits...)
	}
	return hs
}

// sameLines checks that hits are exactly lines, each once: with the page
// filters off every line is a hit, at the offset where the line starts
// in the stream (each line followed by a newline).
func sameLines(t testing.TB, what string, hits []hit.Hit, lines [][]byte) {
	t.Helper()
	if len(hits) != len(lines) {
		t.Fatalf("%s: %d hits, want %d", what, len(hits), len(lines))
	}
	starts := map[uint64]int{}
	var off uint64
	for i, l := range lines {
		starts[off] = i
		off += uint64(len(l)) + 1
	}
	for _, h := range hits {
		i, ok := starts[h.Offset]
		if !ok {
			t.Fatalf("%s: hit at %d is no line start", what, h.Offset)
		}
		delete(starts, h.Offset)
		// The line's path as counted: escapes normalised, runs of
		// slashes made one (the real log asks for //favicon.ico once).
		line := bytes.ReplaceAll(lines[i], []byte(" //"), []byte(" /"))
		if h.Site != "example.com" || !bytes.Contains(line, []byte(" "+h.Path)) && !strings.Contains(h.Path, "%") {
			t.Fatalf("%s: hit %+v is not line %d: %s", what, h, i, lines[i])
		}
	}
}

// runStdin runs a Stdin on r; wait returns Run's error.
func (b *bundle) runStdin(t testing.TB, ctx context.Context, r io.Reader, reg prometheus.Registerer) (wait func() error) {
	t.Helper()
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	s, err := tail.NewStdin(context.Background(), b.cfg, b.bus, r, b.logger, reg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	return func() error {
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("stdin: Run did not return")
			return nil
		}
	}
}

func joinLines(lines [][]byte) []byte {
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// oddReader returns its data in reads of odd sizes, so lines straddle
// reads.
type oddReader struct {
	data []byte
	n    int
}

func (r *oddReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	r.n++
	size := min(len(p), len(r.data), 1+r.n*7919%70000)
	copy(p, r.data[:size])
	r.data = r.data[size:]
	return size, nil
}

// The real log on standard input, page filters off: 10,000 lines are
// 10,000 hits in JetStream, each line once, and Run returns nil at EOF.
func TestStdinRealLogExactly(t *testing.T) {
	b := setup(t)
	b.cfg.Stdin.Site = "example.com"
	b.cfg.Inputs = nil // --stdin needs no files
	wait := b.runStdin(t, context.Background(), &oddReader{data: joinLines(b.lines)}, nil)
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	msgs := b.streamMsgs(t, "stdin")
	if len(msgs) != 1 {
		t.Fatalf("%d streams, want 1", len(msgs))
	}
	for name, ms := range msgs {
		if !strings.HasPrefix(name, "stdin.") || ms[len(ms)-1].end != int64(len(joinLines(b.lines))) {
			t.Fatalf("stream %q ends at %d", name, ms[len(ms)-1].end)
		}
		sameLines(t, "stdin", hitsOf(ms), b.lines)
	}
}

// Through the default page filters, the same 4,233 page views (1,876 of
// them counted) as from a file (TestPagesFilteredAndCounted), and every
// line counted once.
func TestStdinPageFilters(t *testing.T) {
	b := setup(t)
	b.cfg.Pages = pageview.DefaultConfig()
	b.cfg.Stdin.Site = "example.com"
	reg := prometheus.NewRegistry()
	if err := b.runStdin(t, context.Background(), bytes.NewReader(joinLines(b.lines)), reg)(); err != nil {
		t.Fatal(err)
	}
	var got, counted int
	for _, ms := range b.streamMsgs(t, "stdin") {
		for _, h := range hitsOf(ms) {
			got++
			if !h.Uncounted {
				counted++
			}
		}
	}
	hits := counter(t, reg, "pagewatch_ingest_tail_lines_total", "result", "hit")
	skipped := counter(t, reg, "pagewatch_ingest_tail_lines_total", "result", "skipped")
	if got != 4233 || counted != 1876 || hits != 4233 || skipped != 5767 {
		t.Fatalf("stream holds %d hits, %d counted; counted %v hits, %v skipped; want 4233, 1876, 4233, 5767", got, counted, hits, skipped)
	}
	if n := counter(t, reg, "pagewatch_ingest_tail_filtered_lines_total", "filter", pageview.DropStatic); n != 5348 {
		t.Fatalf("filtered{static} = %v, want 5348", n)
	}
}

// At EOF the last, unfilled batch is published at once (not after the
// flush interval), a last line without a newline included; an over-long
// line is skipped and counted without holding it.
func TestStdinEOFFlushes(t *testing.T) {
	b := setup(t)
	b.cfg.Stdin.Site = "example.com"
	b.cfg.Stdin.FlushInterval = time.Minute
	b.cfg.MaxLineBytes = 1024
	reg := prometheus.NewRegistry()
	in := bytes.Join([][]byte{b.lines[0], bytes.Repeat([]byte("x"), 5000), b.lines[1], b.lines[2]}, []byte("\n"))
	start := time.Now()
	if err := b.runStdin(t, context.Background(), &oddReader{data: in}, reg)(); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("EOF took %s", time.Since(start))
	}
	var hs []hit.Hit
	for _, ms := range b.streamMsgs(t, "stdin") {
		hs = append(hs, hitsOf(ms)...)
	}
	second := uint64(len(b.lines[0]) + 1 + 5000 + 1)
	want := []uint64{0, second, second + uint64(len(b.lines[1])) + 1}
	if len(hs) != 3 || hs[0].Offset != want[0] || hs[1].Offset != want[1] || hs[2].Offset != want[2] {
		t.Fatalf("hits %+v, want offsets %v", hs, want)
	}
	if n := counter(t, reg, "pagewatch_ingest_tail_malformed_lines_total", "reason", "too_long"); n != 1 {
		t.Fatalf("too_long = %v, want 1", n)
	}
}

// A quiet pipe: lines are published within flush_interval although the
// batch is far from full and the pipe stays open.
func TestStdinQuietPipeFlushes(t *testing.T) {
	b := setup(t)
	b.cfg.Stdin.Site = "example.com"
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	wait := b.runStdin(t, ctx, pr, nil)
	defer func() {
		cancel()
		pw.Close()
		if err := wait(); err != nil {
			t.Error(err)
		}
	}()
	start := time.Now()
	if _, err := pw.Write(joinLines(b.lines[:5])); err != nil {
		t.Fatal(err)
	}
	testcheck.Eventually(t, 20*time.Second, "5 hits", func() bool {
		n := 0
		for _, ms := range b.streamMsgs(t, "stdin") {
			n += len(hitsOf(ms))
		}
		return n == 5
	})
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("published after %s; flush_interval is 1s", d)
	}
}

// Cancelling (SIGTERM) returns promptly, with the lines already read
// published, although the pipe stays open and a Read is blocked in it.
func TestStdinCancelStopsPromptly(t *testing.T) {
	b := setup(t)
	b.cfg.Stdin.Site = "example.com"
	b.cfg.Stdin.FlushInterval = time.Minute
	reg := prometheus.NewRegistry()
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	wait := b.runStdin(t, ctx, pr, reg)
	if _, err := pw.Write(joinLines(b.lines[:10])); err != nil {
		t.Fatal(err)
	}
	testcheck.Eventually(t, 20*time.Second, "10 lines read", func() bool {
		return counter(t, reg, "pagewatch_ingest_tail_lines_total", "result", "hit") == 10
	})
	start := time.Now()
	cancel()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Run returned %s after cancel", d)
	}
	for _, ms := range b.streamMsgs(t, "stdin") {
		sameLines(t, "stdin", hitsOf(ms), b.lines[:10])
	}
}

// NATS stopped mid-stream and restarted: reading stops while it is away
// (the writer blocks, as Apache's children would), and the stream ends
// up with every line once: retries are deduplicated by message ID.
func TestStdinNATSOutage(t *testing.T) {
	b := setup(t)
	b.cfg.Stdin.Site = "example.com"
	b.cfg.BatchLines = 250
	b.cfg.PublishTimeout = 300 * time.Millisecond
	pr, pw := io.Pipe()
	wait := b.runStdin(t, context.Background(), pr, nil)
	var written atomic.Int64
	go func() {
		for i := 0; i < len(b.lines); i += 50 {
			if _, err := pw.Write(joinLines(b.lines[i:min(i+50, len(b.lines))])); err != nil {
				t.Error(err)
				return
			}
			written.Store(int64(min(i+50, len(b.lines))))
			time.Sleep(10 * time.Millisecond) // 2s in all: NATS stops mid-stream
		}
		pw.Close()
	}()
	testcheck.Eventually(t, 20*time.Second, "3000 lines published", func() bool {
		n := 0
		for _, ms := range b.streamMsgs(t, "stdin") {
			n += len(hitsOf(ms))
		}
		return n >= 3000
	})
	b.nats.Stop()
	time.Sleep(time.Second)
	during := written.Load()
	time.Sleep(time.Second)
	if after := written.Load(); after != during || after == int64(len(b.lines)) {
		t.Fatalf("the writer went on while NATS was down: %d then %d lines written", during, after)
	}
	t.Logf("NATS down: the writer is blocked after %d lines", during)
	b.nats.Restart(t)
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	msgs := b.streamMsgs(t, "stdin")
	for _, ms := range msgs {
		sameLines(t, "stdin", hitsOf(ms), b.lines)
	}
	if len(msgs) != 1 {
		t.Fatalf("%d streams", len(msgs))
	}
}

// BenchmarkStdinToJetStream measures `ingest tail --stdin` end to end
// within one process: read, parse, encode and publish (acked, file
// store) 200,000 real log lines, as BenchmarkTailToJetStream does for a
// file. Run returns at EOF once every batch is acked.
func BenchmarkStdinToJetStream(b *testing.B) {
	bb := setup(b)
	bb.cfg.BatchLines = 5000
	bb.cfg.Stdin.Site = "example.com"
	var all [][]byte
	for len(all) < 200_000 {
		all = append(all, bb.lines...)
	}
	data := joinLines(all)
	for _, inFlight := range []int{1, 4} {
		b.Run("max_in_flight="+strconv.Itoa(inFlight), func(b *testing.B) {
			bb.cfg.Stdin.MaxInFlight = inFlight
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if err := bb.runStdin(b, context.Background(), bytes.NewReader(data), nil)(); err != nil {
					b.Fatal(err)
				}
			}
			elapsed := time.Since(start).Seconds()
			b.ReportMetric(float64(b.N*len(all))/elapsed, "lines/s")
			b.ReportMetric(float64(b.N*len(data))/elapsed/1e6, "MB/s")
		})
	}
}
