package tail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
)

// BenchmarkScanRecorded compares two ways of listing the files recorded
// on a subject: the ordered consumer with headers only that
// recordedFiles uses, and a GetMsg loop (next message on the subject,
// payload and all). The subject holds 200 batches of 400 KiB, interleaved
// with another file's, as three days of a busy log would.
func BenchmarkScanRecorded(b *testing.B) {
	fw := scanFixture(b, 200, 400<<10)
	ctx := context.Background()
	b.Run("ordered-headers-only", func(b *testing.B) {
		for b.Loop() {
			rec, err := fw.recordedFiles(ctx)
			if err != nil || len(rec) != 4 {
				b.Fatalf("%d files, %v", len(rec), err)
			}
		}
	})
	b.Run("getmsg-loop", func(b *testing.B) {
		for b.Loop() {
			files := map[identity]int64{}
			for seq := uint64(1); ; seq++ {
				m, err := fw.stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(fw.subject))
				if errors.Is(err, jetstream.ErrMsgNotFound) {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				id, end, err := parsePosition(m.Header)
				if err != nil {
					b.Fatal(err)
				}
				files[id] = max(files[id], end)
				seq = m.Sequence
			}
			if len(files) != 4 {
				b.Fatalf("%d files", len(files))
			}
		}
	})
}

// scanFixture publishes n messages of size bytes on a follower's subject,
// for four files in turn, and as many on another subject between them.
func scanFixture(tb testing.TB, n, size int) *position {
	tb.Helper()
	ns := natstest.Start(tb)
	bc := bus.DefaultConfig()
	bc.URL = ns.URL
	logger := slog.New(slog.DiscardHandler)
	bb, err := bus.Connect(context.Background(), bc, "bench", logger)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(bb.Close)
	cfg := DefaultConfig()
	cfg.Instance = "bench"
	cfg.Inputs = []Input{{Path: filepath.Join(tb.TempDir(), "access.log"), Site: "example.com"}}
	tl, err := New(cfg, Deps{Bus: bb, Logger: logger, Registry: prometheus.NewRegistry()})
	if err != nil {
		tb.Fatal(err)
	}
	if err := tl.Start(context.Background()); err != nil { // the stream, the leases
		tb.Fatal(err)
	}
	fw := &tl.newFollower(cfg.Inputs[0], tl.parsers[0], tl.states[0]).live.pos
	other := bb.HitsSubject("bench", "other")
	payload := make([]byte, size)
	for i := range n {
		id := identity{dev: 1, ino: uint64(i * 4 / n), fpLen: fingerprintLen, fp: fmt.Sprintf("%016x", i*4/n)}
		for _, subject := range []string{fw.subject, other} {
			msg := &nats.Msg{Subject: subject, Data: payload, Header: nats.Header{}}
			msg.Header.Set(HeaderFile, id.String())
			msg.Header.Set(HeaderEnd, strconv.Itoa(i*size))
			if _, err := bb.JS.PublishMsg(context.Background(), msg); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return fw
}
