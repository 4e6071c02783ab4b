package tail_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/pipeline/tail"
	"github.com/pagewatch/pagewatch/pipeline/tail/tailstatus"
)

// TestHeartbeat: a tailer following a file says so in the tailers
// bucket, by the file's real path, with its size, how far it is stored
// and the bytes behind (here an incomplete last line, which is never
// published until its newline comes); stopped, its record says so, and
// then expires.
func TestHeartbeat(t *testing.T) {
	b := setup(t)
	lines := b.lines[:50]
	writeLines(t, b.log, lines, true)
	partial := []byte(`10.0.0.1 - - [01/Jan/2024:00:00:00 +0000] "GET /half`)
	f, err := os.OpenFile(b.log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(partial); err != nil {
		t.Fatal(err)
	}
	f.Close()
	st, err := os.Stat(b.log)
	if err != nil {
		t.Fatal(err)
	}
	size := st.Size()

	every := 100 * time.Millisecond
	tl, err := tail.New(b.cfg, tail.Deps{Bus: b.bus, Logger: b.logger, Registry: prometheus.NewRegistry()}, tail.WithHeartbeat(every))
	if err != nil {
		t.Fatal(err)
	}
	if err := tl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx) }()

	var rec tailstatus.Tailer
	waitFor(t, 10*time.Second, "a heartbeat with the file published up to its incomplete line", func() bool {
		recs, err := tailstatus.Read(context.Background(), b.bus)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || len(recs[0].Inputs) != 1 {
			return false
		}
		rec = recs[0]
		in := rec.Inputs[0]
		return in.Size == size && in.Behind == int64(len(partial)) && !in.LastPublish.IsZero()
	})
	in := rec.Inputs[0]
	if in.Name != b.log || in.Kind != tailstatus.KindFile {
		t.Errorf("input %s %q, want file %q", in.Kind, in.Name, b.log)
	}
	if in.Offset != size-int64(len(partial)) || in.Lines != int64(len(lines)) {
		t.Errorf("offset %d lines %d, want %d and %d", in.Offset, in.Lines, size-int64(len(partial)), len(lines))
	}
	if rec.Instance != "test" || rec.Host == "" || rec.Stopped || rec.Interval != every || time.Since(rec.At) > 5*time.Second {
		t.Errorf("record %+v", rec)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	recs, err := tailstatus.Read(context.Background(), b.bus)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || !recs[0].Stopped {
		t.Fatalf("after a clean stop: %+v, want one record saying stopped", recs)
	}
	// The bucket's TTL is six beats: the record then goes.
	waitFor(t, 10*time.Second, "the stopped tailer's record to expire", func() bool {
		recs, err := tailstatus.Read(context.Background(), b.bus)
		if err != nil {
			// Listed as it expired (tailstatus.listTimeout): read again.
			t.Logf("read while the record expires: %v", err)
			return false
		}
		return len(recs) == 0
	})
}

func waitFor(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
