package tail_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/realdata"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
	"github.com/pagewatch/pagewatch/pipeline/tail"
)

type bundle struct {
	bus    *bus.Bus
	nats   *natstest.Server
	dir    string
	log    string // the access log being tailed
	cfg    tail.Config
	lines  [][]byte
	logger *slog.Logger
}

func setup(t testing.TB) *bundle {
	t.Helper()
	ns := natstest.Start(t)
	cfg := bus.DefaultConfig()
	cfg.URL = ns.URL
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	b, err := bus.Connect(context.Background(), cfg, "test", logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	dir := t.TempDir()
	tc := tail.DefaultConfig()
	tc.Instance = "test"
	tc.PollInterval = 10 * time.Millisecond
	tc.StartAt = "beginning"
	tc.RotateGrace = 200 * time.Millisecond
	tc.BatchLines = 700 // several batches per chunk, and batches that straddle chunks
	tc.Inputs = []tail.Input{{Path: filepath.Join(dir, "access.log"), Site: "example.com"}}
	// These tests count lines through restarts and rotations: with the
	// page filters off every real line is a hit. pages_test.go has them on.
	tc.Pages.Methods, tc.Pages.Statuses, tc.Pages.StaticExtensions, tc.Pages.Bots = nil, nil, nil, nil
	return &bundle{bus: b, nats: ns, dir: dir, log: tc.Inputs[0].Path, cfg: tc,
		lines: realdata.Lines(t, realdata.ApacheLog), logger: logger}
}

// start runs a tailer until the returned stop is called.
func (b *bundle) start(t testing.TB) (stop func()) {
	t.Helper()
	stop, _ = b.startWith(t, prometheus.NewRegistry())
	return stop
}

// startWith runs a tailer with its metrics in reg until the returned
// stop is called; ended reports whether Run returned before that, and
// its error.
func (b *bundle) startWith(t testing.TB, reg *prometheus.Registry) (stop func(), ended func() (bool, error)) {
	t.Helper()
	tl, err := tail.New(b.cfg, tail.Deps{Bus: b.bus, Logger: b.logger, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := tl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx); close(done) }()
	var (
		once   sync.Once
		runErr error
		over   bool
	)
	ended = func() (bool, error) {
		select {
		case err, ok := <-done:
			if ok {
				over, runErr = true, err
			}
		default:
		}
		return over, runErr
	}
	stop = func() {
		once.Do(func() {
			cancel()
			if err, ok := <-done; ok {
				runErr = err
			}
			if runErr != nil {
				t.Errorf("tailer: %v", runErr)
			}
		})
	}
	t.Cleanup(stop)
	return stop, ended
}

func appendLines(t testing.TB, path string, lines [][]byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.Write(append(append([]byte{}, l...), '\n')); err != nil {
			t.Fatal(err)
		}
	}
}

// published reads every hit in the stream, in order, and fails if the
// byte ranges of a file's messages overlap: a line published twice.
func (b *bundle) published(t testing.TB) []hit.Hit {
	t.Helper()
	ctx := context.Background()
	s, err := b.bus.JS.Stream(ctx, b.bus.HitsStreamName())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var hits []hit.Hit
	prevEnd := map[string]int64{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue // purged
		}
		hs, err := hit.Decode(m.Data, nil)
		if err != nil {
			t.Fatalf("message %d: %v", seq, err)
		}
		// 0 where a header is missing, and a start of 0 is not checked.
		start, _ := strconv.ParseInt(m.Header.Get(tail.HeaderStart), 10, 64)
		end, _ := strconv.ParseInt(m.Header.Get(tail.HeaderEnd), 10, 64)
		if prev, ok := prevEnd[m.Subject]; ok && start != prev && start != 0 {
			t.Fatalf("message %d covers [%d, %d) but the previous one ended at %d", seq, start, end, prev)
		}
		prevEnd[m.Subject] = end
		hits = append(hits, hs...)
	}
	return hits
}

// waitHits waits until the stream holds n hits.
func (b *bundle) waitHits(t *testing.T, n int) []hit.Hit {
	t.Helper()
	var hits []hit.Hit
	testcheck.Eventually(t, 20*time.Second, fmt.Sprintf("%d hits in the stream", n), func() error {
		if hits = b.published(t); len(hits) > n {
			t.Fatalf("stream holds %d hits, want %d", len(hits), n)
		}
		if len(hits) != n {
			return fmt.Errorf("it holds %d", len(hits))
		}
		return nil
	})
	return hits
}

func TestRealLogExactlyOnceAcrossRestarts(t *testing.T) {
	b := setup(t)
	stop := b.start(t)
	appendLines(t, b.log, b.lines[:3000])
	b.waitHits(t, 3000)
	stop()

	// Written while the tailer is down: must be read after the restart.
	appendLines(t, b.log, b.lines[3000:6000])
	stop = b.start(t)
	appendLines(t, b.log, b.lines[6000:])
	hits := b.waitHits(t, len(b.lines))
	stop()

	var first hit.Hit
	for _, h := range hits {
		if h.Offset == 0 {
			first = h
		}
	}
	if first.Path != "/presentations/logstash-monitorama-2013/images/kibana-search.png" || first.Site != "example.com" || first.Status != 200 {
		t.Fatalf("first hit: %+v", first)
	}
}

func TestRotationByRename(t *testing.T) {
	b := setup(t)
	stop := b.start(t)
	appendLines(t, b.log, b.lines[:1000])
	b.waitHits(t, 1000)
	// logrotate's default: rename, create the new file, then the server
	// reopens its logs, writing to the old file until it does.
	appendLines(t, b.log, b.lines[1000:1500])
	if err := os.Rename(b.log, b.log+".1"); err != nil {
		t.Fatal(err)
	}
	appendLines(t, b.log+".1", b.lines[1500:1600])
	appendLines(t, b.log, b.lines[1600:1700]) // the new file exists...
	time.Sleep(50 * time.Millisecond)
	appendLines(t, b.log+".1", b.lines[1700:1800]) // ...and the old one still gets lines
	appendLines(t, b.log, b.lines[1800:2500])
	b.waitHits(t, 2500)
	stop()
}

func TestCopyTruncate(t *testing.T) {
	b := setup(t)
	stop := b.start(t)
	appendLines(t, b.log, b.lines[:1000])
	b.waitHits(t, 1000)
	if err := os.Truncate(b.log, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // let the tailer see the empty file
	appendLines(t, b.log, b.lines[1000:1200])
	b.waitHits(t, 1200)
	// Truncated and written again with the same bytes: same inode, same
	// head, same end offsets. Still new lines, and not a duplicate publish.
	if err := os.Truncate(b.log, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	appendLines(t, b.log, b.lines[1000:1200])
	b.waitHits(t, 1400)
	stop()
}

func TestStartAtEndSkipsOldLinesButKeepsNewOnes(t *testing.T) {
	b := setup(t)
	b.cfg.StartAt = "end"
	appendLines(t, b.log, b.lines[:500]) // history: not counted
	stop := b.start(t)
	b.waitMessages(t, 1) // the position marker
	stop()
	appendLines(t, b.log, b.lines[500:800]) // written while down: counted
	stop = b.start(t)
	b.waitHits(t, 300)
	stop()
}

func TestOutageOfNATS(t *testing.T) {
	b := setup(t)
	stop := b.start(t)
	appendLines(t, b.log, b.lines[:2000])
	b.waitHits(t, 2000)
	b.nats.Stop()
	appendLines(t, b.log, b.lines[2000:4000])
	time.Sleep(300 * time.Millisecond)
	b.nats.Restart(t)
	appendLines(t, b.log, b.lines[4000:5000])
	b.waitHits(t, 5000)
	stop()
}

// A quiet file's messages can age out of the stream (hits_max_age); the
// tailer must carry on from its own offset, losing and repeating nothing.
func TestPositionAgedOutOfStream(t *testing.T) {
	b := setup(t)
	stop := b.start(t)
	appendLines(t, b.log, b.lines[:500])
	b.waitHits(t, 500)
	s, err := b.bus.JS.Stream(context.Background(), b.bus.HitsStreamName())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Purge(context.Background()); err != nil { // as if MaxAge had passed
		t.Fatal(err)
	}
	appendLines(t, b.log, b.lines[500:800])
	b.waitHits(t, 300)
	stop()
}

func (b *bundle) waitMessages(t *testing.T, n uint64) {
	t.Helper()
	testcheck.Eventually(t, 10*time.Second, fmt.Sprintf("%d messages in the stream", n), func() error {
		s, err := b.bus.JS.Stream(context.Background(), b.bus.HitsStreamName())
		if err != nil {
			return err
		}
		info, err := s.Info(context.Background())
		if err != nil {
			return err
		}
		if info.State.Msgs < n {
			return fmt.Errorf("it holds %d", info.State.Msgs)
		}
		return nil
	})
}
