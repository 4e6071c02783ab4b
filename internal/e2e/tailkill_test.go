package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/realdata"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/pipeline/tail"
)

// repeatedLog is the real log, byte for byte, passes times over: what the
// tailed file holds once everything is appended. The harness turns the
// page-view filters off, so each of its lines is one hit.
type repeatedLog struct {
	pass      []byte // the real log, newline-terminated lines
	starts    []int64
	passes    int
	lineCount int // lines in one pass
}

func newRepeatedLog(t *testing.T, passes int) *repeatedLog {
	t.Helper()
	r := &repeatedLog{passes: passes}
	for _, l := range realdata.Lines(t, realdata.ApacheLog) {
		r.starts = append(r.starts, int64(len(r.pass)))
		r.pass = append(r.pass, l...)
		r.pass = append(r.pass, '\n')
	}
	r.lineCount = len(r.starts)
	return r
}

func (r *repeatedLog) lines() int      { return r.lineCount * r.passes }
func (r *repeatedLog) size() int64     { return int64(len(r.pass)) * int64(r.passes) }
func (r *repeatedLog) passSize() int64 { return int64(len(r.pass)) }

// linesBefore is how many lines start before byte end of the file.
func (r *repeatedLog) linesBefore(end int64) int {
	full, in := end/r.passSize(), end%r.passSize()
	n := int(full) * r.lineCount
	for _, s := range r.starts {
		if s < in {
			n++
		}
	}
	return n
}

// offsetSum is the sum of the byte offsets of every line in the file.
func (r *repeatedLog) offsetSum() uint64 {
	var one uint64
	for _, s := range r.starts {
		one += uint64(s)
	}
	p := uint64(r.passes)
	return p*one + uint64(len(r.pass))*uint64(r.lineCount)*p*(p-1)/2
}

// appender writes a repeatedLog to the tailed file in chunks of random
// sizes (from one byte to 256 KiB, most of them small), cut anywhere,
// mid-line included, as a buffered web server writes.
type appender struct {
	src     *repeatedLog
	path    string
	written atomic.Int64 // bytes
	chunks  atomic.Int64
}

// run appends everything at about rate bytes/s (0: as fast as it can).
func (a *appender) run(ctx context.Context, rng *rand.Rand, rate float64) error {
	f, err := os.OpenFile(a.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	total := a.src.size()
	passLen := a.src.passSize()
	began := time.Now()
	for off := int64(0); off < total; {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := int64(1 + rng.IntN(1+rng.IntN(256<<10)))
		n = min(n, total-off)
		// A chunk may straddle the end of a pass.
		for left := n; left > 0; {
			in := off % passLen
			m := min(left, passLen-in)
			if _, err := f.Write(a.src.pass[in : in+m]); err != nil {
				return err
			}
			off += m
			left -= m
		}
		a.written.Store(off)
		a.chunks.Add(1)
		if rate > 0 {
			if ahead := time.Duration(float64(off)/rate*float64(time.Second)) - time.Since(began); ahead > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(ahead):
				}
			}
		}
	}
	return nil
}

// ackWatch counts, from a subscription to every inbox, the JetStream
// publish acknowledgements of the hits stream that were duplicates
// (absorbed by the stream's Nats-Msg-Id window) and the publishes refused
// for a wrong expected last subject sequence. It sees the acks sent while
// it is connected; those of a publish whose requester gave up are seen too.
type ackWatch struct {
	stream               string
	acks, dups, wrongSeq atomic.Int64
}

func (b *bundle) watchAcks(t *testing.T, stream string) *ackWatch {
	t.Helper()
	w := &ackWatch{stream: stream}
	nc, err := nats.Connect(b.natsURL(), nats.Name("e2e ack watch"), nats.MaxReconnects(-1),
		nats.ReconnectWait(50*time.Millisecond), nats.RetryOnFailedConnect(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	sub, err := nc.Subscribe("_INBOX.>", func(m *nats.Msg) {
		if len(m.Data) > 1024 || !strings.HasPrefix(string(m.Data), `{"`) {
			return // a message a loader fetched, or another reply
		}
		var ack struct {
			Stream    string `json:"stream"`
			Seq       uint64 `json:"seq"`
			Duplicate bool   `json:"duplicate"`
			Error     *struct {
				ErrCode jetstream.ErrorCode `json:"err_code"`
			} `json:"error"`
		}
		if json.Unmarshal(m.Data, &ack) != nil || ack.Stream != w.stream {
			return
		}
		switch {
		case ack.Error != nil:
			if ack.Error.ErrCode == jetstream.JSErrCodeStreamWrongLastSequence {
				w.wrongSeq.Add(1)
			}
		case ack.Duplicate:
			w.dups.Add(1)
		case ack.Seq > 0:
			w.acks.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = sub.SetPendingLimits(-1, -1)
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *ackWatch) String() string {
	return fmt.Sprintf("%d publish acks seen, %d duplicates absorbed by the stream's Nats-Msg-Id window, %d publishes refused for a wrong expected last subject sequence",
		w.acks.Load(), w.dups.Load(), w.wrongSeq.Load())
}

// hitsStream is the hits stream through a connection of the test's own
// that reconnects within 50 ms, so that it can time what the daemons do
// when NATS comes back.
func (b *bundle) hitsStream(t *testing.T, name string) jetstream.Stream {
	t.Helper()
	nc, err := nats.Connect(b.natsURL(), nats.Name("e2e stream watch"), nats.MaxReconnects(-1),
		nats.ReconnectWait(50*time.Millisecond), nats.RetryOnFailedConnect(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// subjectMsgs is how many messages the subject holds.
func subjectMsgs(ctx context.Context, t *testing.T, s jetstream.Stream, subject string) uint64 {
	t.Helper()
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	return info.State.Subjects[subject]
}

// subjectEnd is the Pagewatch-End of the subject's last message: how far
// the tailer has published the file (-1: nothing yet).
func subjectEnd(ctx context.Context, t *testing.T, s jetstream.Stream, subject string) int64 {
	t.Helper()
	m, err := s.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		return -1
	}
	end, err := strconv.ParseInt(m.Header.Get(tail.HeaderEnd), 10, 64)
	if err != nil {
		t.Fatalf("message %d: %s %q", m.Sequence, tail.HeaderEnd, m.Header.Get(tail.HeaderEnd))
	}
	return end
}

// whileElecting runs f again while JetStream has no one to answer it: in
// a cluster just restarted node by node, a stream can have its leader
// again before the meta leader answers a consumer's creation (CI once
// failed here, 12 s after every stream was led).
func whileElecting(ctx context.Context, f func() error) error {
	for {
		err := f()
		if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, jetstream.ErrNoStreamResponse) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (still, after %w)", err, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// streamFigures describes one subject's messages read in order.
type streamFigures struct {
	msgs, empty int         // messages, and those without lines (position markers)
	lines       int         // sum of Pagewatch-Lines
	end         int64       // Pagewatch-End of the last message
	file        string      // Pagewatch-File, the same on every message
	stored      []time.Time // when each message was stored
}

// firstAfter is when the first message stored after at was stored.
func (f streamFigures) firstAfter(at time.Time) (time.Time, bool) {
	for _, ts := range f.stored {
		if ts.After(at) {
			return ts, true
		}
	}
	return time.Time{}, false
}

// checkSubject reads the headers of every message on subject and requires
// their byte ranges to tile the file from 0: each message starts where the
// one before it ended, so no byte of the file was published twice or
// skipped, whatever was retried or restarted.
func checkSubject(t *testing.T, s jetstream.Stream, subject string) streamFigures {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	want := subjectMsgs(ctx, t, s, subject)
	var cons jetstream.Consumer
	err := whileElecting(ctx, func() (err error) {
		cons, err = s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}, HeadersOnly: true})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var f streamFigures
	var prevEnd int64
	bad := 0
	for uint64(f.msgs) < want {
		// A batch can end in "no responders" too, after the fetch was
		// taken (CI once failed so, seconds after every stream was
		// led): fetched again, what it delivered before is kept, as the
		// ordered consumer goes on after it.
		var msgs []jetstream.Msg
		err := whileElecting(ctx, func() error {
			batch, err := cons.Fetch(1000, jetstream.FetchMaxWait(5*time.Second))
			if err != nil {
				return err
			}
			for m := range batch.Messages() {
				msgs = append(msgs, m)
			}
			return batch.Error()
		})
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for _, m := range msgs {
			got++
			h := m.Headers()
			start, err1 := strconv.ParseInt(h.Get(tail.HeaderStart), 10, 64)
			end, err2 := strconv.ParseInt(h.Get(tail.HeaderEnd), 10, 64)
			lines, err3 := strconv.Atoi(h.Get(tail.HeaderLines))
			if err1 != nil || err2 != nil || err3 != nil {
				t.Fatalf("message %d: headers %v", f.msgs, h)
			}
			if f.msgs == 0 {
				f.file = h.Get(tail.HeaderFile)
			} else if h.Get(tail.HeaderFile) != f.file {
				t.Errorf("message %d: file %s, the first was %s", f.msgs, h.Get(tail.HeaderFile), f.file)
			}
			if start != prevEnd || end < start || (lines == 0) != (end == start) {
				if bad++; bad <= 10 {
					t.Errorf("message %d covers bytes [%d, %d) with %d lines; the one before ended at %d", f.msgs, start, end, lines, prevEnd)
				}
			}
			if lines == 0 {
				f.empty++
			}
			f.lines += lines
			prevEnd, f.end = end, end
			if md, err := m.Metadata(); err == nil {
				f.stored = append(f.stored, md.Timestamp)
			}
			f.msgs++
		}
		if got == 0 {
			t.Fatalf("read %d of the %d messages on %s, then nothing for 5s", f.msgs, want, subject)
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d messages on %s do not start where the one before ended", bad, f.msgs, subject)
	}
	return f
}

// checkRepeatedLog requires ClickHouse to hold every line of src exactly
// once: distinct hits, distinct line offsets and their sum (so no line is
// stored under two sequences, as a line published twice would be), and
// page_minutes as the sweeper counts it, cell by cell against the hits.
// It returns how many rows were ever inserted into hits.
func (b *bundle) checkRepeatedLog(t *testing.T, src *repeatedLog) (inserted int) {
	t.Helper()
	n := src.lines()
	if got := b.hitCount(t); got != n {
		t.Errorf("%d distinct (seq, line_offset) hits, want %d", got, n)
	}
	if got := b.count(t, "SELECT uniqExact(line_offset) FROM pagewatch.hits"); got != n {
		t.Errorf("%d distinct line offsets in hits, want %d", got, n)
	}
	sum := b.ch.Query(t, "SELECT sum(o) FROM (SELECT DISTINCT line_offset AS o FROM pagewatch.hits)")
	if strings.TrimSpace(sum) != strconv.FormatUint(src.offsetSum(), 10) {
		t.Errorf("line offsets in hits sum to %s, the file's lines start at offsets summing to %d", strings.TrimSpace(sum), src.offsetSum())
	}
	if got := b.count(t, "SELECT sum(h) FROM (SELECT any(hits) AS h FROM pagewatch.page_minutes GROUP BY site, path, minute, seq)"); got != n {
		t.Errorf("per-minute counts sum to %d, want %d", got, n)
	}
	// Each (page, minute) as the sweeper counts it, against the distinct
	// hits; every pass of the log adds the same hits to each cell.
	cells := func(sql string) map[string]int {
		out := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(b.ch.Query(t, sql)), "\n") {
			i := strings.LastIndexByte(line, '\t')
			v, err := strconv.Atoi(line[i+1:])
			if err != nil {
				t.Fatalf("%q", line)
			}
			out[line[:i]] = v
		}
		return out
	}
	minutes := cells(`SELECT hex(path), toUnixTimestamp(minute), sum(h) FROM (
    SELECT path, minute, any(hits) AS h FROM pagewatch.page_minutes GROUP BY site, path, minute, seq
) GROUP BY path, minute`)
	fromHits := cells(`SELECT hex(path), toUnixTimestamp(toStartOfMinute(ts)), count() FROM (
    SELECT DISTINCT path, ts, seq, line_offset FROM pagewatch.hits
) GROUP BY path, toStartOfMinute(ts)`)
	bad := 0
	for k, v := range minutes {
		if v != fromHits[k] || v%src.passes != 0 {
			if bad++; bad <= 10 {
				t.Errorf("page, minute %s: page_minutes counts %d, hits hold %d (each should be a multiple of %d passes)", k, v, fromHits[k], src.passes)
			}
		}
	}
	if len(minutes) != len(fromHits) {
		t.Errorf("page_minutes has %d (page, minute) cells, hits %d", len(minutes), len(fromHits))
	}
	t.Logf("%d (page, minute) cells compared between page_minutes and hits, %d differ", len(minutes), bad)
	return b.count(t, "SELECT sum(rows) FROM system.parts WHERE database = 'pagewatch' AND table = 'hits' AND level = 0")
}

// waitPublished waits until the tailer has published the file up to end.
func waitPublished(t *testing.T, s jetstream.Stream, subject string, end int64, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	testcheck.Eventually(t, timeout, fmt.Sprintf("the tailer to publish all %d bytes", end), func() error {
		got := subjectEnd(ctx, t, s, subject)
		if got > end {
			t.Fatalf("published up to byte %d of a %d-byte file", got, end)
		}
		if got != end {
			return fmt.Errorf("the tailer has published %d of %d bytes", got, end)
		}
		return nil
	})
}

// alive fails the test if p has exited.
func alive(t *testing.T, p *proc) {
	t.Helper()
	select {
	case err := <-p.done:
		p.done = nil
		t.Errorf("%s exited on its own: %v", p.name, err)
	default:
	}
}

// TestTailSIGKILL20TimesOver1MLines appends the real log 100 times over
// (1,000,000 lines, 237 MB) to the tailed file in random-sized chunks cut
// anywhere, SIGKILLs `ingest tail` at 20 random moments spread over the
// run (each time after the restarted tailer has published something) and
// `ingest load` 4 times, restarting each at once, and requires every line
// once in ClickHouse and in the stream: exact distinct hits, line offsets
// and per-minute counts, and the subject's byte ranges tiling the file.
func TestTailSIGKILL20TimesOver1MLines(t *testing.T) {
	const (
		passes      = 100
		tailKills   = 20
		loaderKills = 4
		// Appending takes about this long; the kills spread over it.
		writeFor = 40 * time.Second
	)
	began := time.Now()
	b := setupLoad(t, "    []", bigLoad)
	src := newRepeatedLog(t, passes)
	bb := b.hitsBus(t)
	stream := b.hitsStream(t, bb.HitsStreamName())
	subject := bb.HitsSubject("e2e", bus.Key(b.log))
	acks := b.watchAcks(t, bb.HitsStreamName())
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 6))
	t.Logf("%d lines (%d bytes), kill seed %d", src.lines(), src.size(), seed)

	loader := b.start(t, "ingest", "load")
	tailer := b.start(t, "ingest", "tail")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	app := &appender{src: src, path: b.log}
	wrote := make(chan error, 1)
	writeBegan := time.Now()
	go func() {
		wrote <- app.run(ctx, rand.New(rand.NewPCG(seed, 7)), float64(src.size())/writeFor.Seconds())
	}()

	loaderAt := map[int]bool{}
	for len(loaderAt) < loaderKills {
		loaderAt[1+rng.IntN(tailKills)] = true
	}
	ctxb := context.Background()
	kills, killedWhileWriting, killedLoader := 0, 0, 0
	var killedAt []string
	for k := 1; k <= tailKills; k++ {
		// Kill k falls around k/21 of the writing time, give or take a
		// fortieth of it, and never before the running tailer has
		// published something.
		at := writeBegan.Add(writeFor*time.Duration(k)/(tailKills+1) + time.Duration(rng.Int64N(int64(writeFor/20))) - writeFor/40)
		time.Sleep(time.Until(at))
		base := subjectMsgs(ctxb, t, stream, subject)
		testcheck.Eventually(t, 30*time.Second, fmt.Sprintf("kill %d: the running tailer to publish something", k), func() bool {
			return subjectMsgs(ctxb, t, stream, subject) != base
		})
		time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
		if app.written.Load() < src.size() {
			killedWhileWriting++
		}
		tailer.kill()
		kills++
		end := subjectEnd(ctxb, t, stream, subject)
		killedAt = append(killedAt, fmt.Sprintf("%.1f%%", 100*float64(end)/float64(src.size())))
		tailer = b.start(t, "ingest", "tail")
		if loaderAt[k] {
			time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
			loader.kill()
			killedLoader++
			loader = b.start(t, "ingest", "load")
		}
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	written := time.Since(writeBegan)
	waitPublished(t, stream, subject, src.size(), 3*time.Minute)
	published := time.Since(writeBegan)
	b.waitHits(t, src.lines(), 3*time.Minute)
	loaded := time.Since(writeBegan)
	raw := b.count(t, "SELECT count() FROM pagewatch.hits")
	time.Sleep(time.Second) // nothing more may arrive
	alive(t, tailer)
	alive(t, loader)

	sf := checkSubject(t, stream, subject)
	if sf.lines != src.lines() || sf.end != src.size() {
		t.Errorf("the subject's messages carry %d lines up to byte %d; the file has %d lines, %d bytes", sf.lines, sf.end, src.lines(), src.size())
	}
	inserted := b.checkRepeatedLog(t, src)
	t.Logf("tailer SIGKILLed %d times (%d while appending; published share of the file at each kill: %s), loader %d times", kills, killedWhileWriting, strings.Join(killedAt, " "), killedLoader)
	t.Logf("%d lines appended in %d chunks in %s; all published after %s, all in ClickHouse after %s; test took %s",
		src.lines(), app.chunks.Load(), written.Round(time.Millisecond), published.Round(time.Millisecond), loaded.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	t.Logf("stream: %d messages on the subject (%d position markers), %d lines, byte ranges contiguous from 0 to %d; %s", sf.msgs, sf.empty, sf.lines, sf.end, acks)
	t.Logf("ClickHouse: %d distinct hits; %d raw rows in hits when the last hit arrived, %d rows inserted in all (%d copies from batches loaded twice)", src.lines(), raw, inserted, inserted-src.lines())
}

// TestTailNATSRestartMidRun appends the real log 20 times over (200,000
// lines) in random-sized chunks over 25 s and stops the NATS server twice
// while lines are being appended, each time for 3 to 5 s, then starts it
// again on the same port and store. The tailer and the loader must carry on by
// themselves, without a restart, and every line must reach ClickHouse and
// the stream exactly once.
func TestTailNATSRestartMidRun(t *testing.T) {
	const (
		passes   = 20
		outages  = 2
		writeFor = 25 * time.Second
	)
	began := time.Now()
	b := setupLoad(t, "    []", bigLoad)
	src := newRepeatedLog(t, passes)
	bb := b.hitsBus(t)
	ctxb := context.Background()
	stream := b.hitsStream(t, bb.HitsStreamName())
	subject := bb.HitsSubject("e2e", bus.Key(b.log))
	acks := b.watchAcks(t, bb.HitsStreamName())
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 8))
	t.Logf("%d lines (%d bytes), seed %d", src.lines(), src.size(), seed)

	loader := b.start(t, "ingest", "load")
	tailer := b.start(t, "ingest", "tail")
	tailAdmin, loadAdmin := tailer.adminAddr(t), loader.adminAddr(t)
	ctx, cancel := context.WithCancel(ctxb)
	defer cancel()
	app := &appender{src: src, path: b.log}
	wrote := make(chan error, 1)
	writeBegan := time.Now()
	go func() {
		wrote <- app.run(ctx, rand.New(rand.NewPCG(seed, 9)), float64(src.size())/writeFor.Seconds())
	}()

	var down time.Duration
	var outageAt [][2]time.Time // stopped, back
	for o := 1; o <= outages; o++ {
		// Outage o starts between 15% and 25% (then 60% and 70%) of the
		// writing time, once the tailer is publishing. (After an outage the
		// tailer may wait out its publish_timeout, 10 s, before it
		// publishes again: the request in flight when NATS stopped gets no
		// answer.)
		at := writeBegan.Add(writeFor * time.Duration(15+45*(o-1)+rng.IntN(11)) / 100)
		time.Sleep(time.Until(at))
		base := subjectMsgs(ctxb, t, stream, subject)
		testcheck.Eventually(t, 30*time.Second, fmt.Sprintf("outage %d: the tailer to publish something first", o), func() bool {
			return subjectMsgs(ctxb, t, stream, subject) != base
		})
		pubEnd := subjectEnd(ctxb, t, stream, subject)
		msgsBefore := subjectMsgs(ctxb, t, stream, subject)
		retriesBefore := metric(t, tailAdmin, "pagewatch_ingest_tail_publish_retries_total")
		writtenAt := app.written.Load()
		stoppedAt := time.Now()
		b.nats.Stop()
		time.Sleep(3*time.Second + time.Duration(rng.IntN(2000))*time.Millisecond)
		writtenDown := app.written.Load()
		b.nats.Restart(t)
		restarted := time.Now()
		down += restarted.Sub(stoppedAt)
		if writtenDown == writtenAt {
			t.Errorf("outage %d: nothing appended while NATS was down", o)
		}
		// Both carry on by themselves: the tailer stores a message after
		// the restart, and the loader loads every line up to its end.
		var tailBack, loadBack time.Duration
		loadTo := 0
		testcheck.Eventually(t, 60*time.Second, fmt.Sprintf("outage %d: the tailer and the loader to carry on after NATS came back", o), func() error {
			if tailBack == 0 {
				m, err := stream.GetLastMsgForSubject(ctxb, subject)
				if err != nil {
					return fmt.Errorf("NATS not back for the test's client: %w", err)
				}
				if !m.Time.After(restarted) {
					return errors.New("the tailer has stored no message since")
				}
				tailBack = m.Time.Sub(restarted)
				end, _ := strconv.ParseInt(m.Header.Get(tail.HeaderEnd), 10, 64)
				loadTo = src.linesBefore(end)
			}
			if n := b.hitCount(t); n < loadTo {
				return fmt.Errorf("the tailer stored a message %s after the restart; the loader has loaded %d hits (waiting for %d)",
					tailBack.Round(time.Millisecond), n, loadTo)
			}
			loadBack = time.Since(restarted)
			return nil
		})
		outageAt = append(outageAt, [2]time.Time{stoppedAt, restarted})
		t.Logf("outage %d: NATS stopped %s after the first append with %.1f%% of the file published (%d messages), %.1f%% written; %.1f%% written when it was back %s later; the tailer stored its next message %s after that and had retried %v publishes; the loader had loaded every line up to it %s after the restart",
			o, stoppedAt.Sub(writeBegan).Round(time.Millisecond), 100*float64(pubEnd)/float64(src.size()), msgsBefore, 100*float64(writtenAt)/float64(src.size()),
			100*float64(writtenDown)/float64(src.size()), restarted.Sub(stoppedAt).Round(time.Millisecond), tailBack.Round(time.Millisecond),
			metric(t, tailAdmin, "pagewatch_ingest_tail_publish_retries_total")-retriesBefore, loadBack.Round(time.Millisecond))
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	written := time.Since(writeBegan)
	waitPublished(t, stream, subject, src.size(), 2*time.Minute)
	b.waitHits(t, src.lines(), 2*time.Minute)
	loaded := time.Since(writeBegan)
	raw := b.count(t, "SELECT count() FROM pagewatch.hits")
	time.Sleep(time.Second) // nothing more may arrive
	alive(t, tailer)
	alive(t, loader)

	sf := checkSubject(t, stream, subject)
	if sf.lines != src.lines() || sf.end != src.size() {
		t.Errorf("the subject's messages carry %d lines up to byte %d; the file has %d lines, %d bytes", sf.lines, sf.end, src.lines(), src.size())
	}
	for i, oa := range outageAt {
		var last time.Time
		during := 0
		for _, ts := range sf.stored {
			if ts.Before(oa[0]) {
				last = ts
			} else if ts.Before(oa[1]) {
				during++
			}
		}
		next, _ := sf.firstAfter(oa[1])
		t.Logf("outage %d in the stream: last message stored %s before NATS stopped, %d while it was shutting down, next %s after it was back",
			i+1, oa[0].Sub(last).Round(time.Millisecond), during, next.Sub(oa[1]).Round(time.Millisecond))
	}
	inserted := b.checkRepeatedLog(t, src)
	t.Logf("%d lines appended in %d chunks in %s with NATS down %d times (%s in all); all in ClickHouse after %s; test took %s",
		src.lines(), app.chunks.Load(), written.Round(time.Millisecond), outages, down.Round(time.Millisecond), loaded.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	t.Logf("tailer: %v publish retries, still the first process; loader: %v fetch errors, %v redeliveries, still the first process",
		metric(t, tailAdmin, "pagewatch_ingest_tail_publish_retries_total"),
		metric(t, loadAdmin, "pagewatch_ingest_load_fetch_errors_total"), metric(t, loadAdmin, "pagewatch_ingest_load_redeliveries_total"))
	t.Logf("stream: %d messages on the subject (%d position markers), %d lines, byte ranges contiguous from 0 to %d; %s", sf.msgs, sf.empty, sf.lines, sf.end, acks)
	t.Logf("ClickHouse: %d distinct hits; %d raw rows in hits when the last hit arrived, %d rows inserted in all (%d copies from batches loaded twice)", src.lines(), raw, inserted, inserted-src.lines())
}
