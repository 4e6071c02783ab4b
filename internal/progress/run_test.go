package progress

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/syncbuf"
	"github.com/pagewatch/pagewatch/internal/testcheck"
)

func TestQuietModeLogsAndNeverRedraws(t *testing.T) {
	clock := newClock()
	clock.step = 10 * time.Second
	var out, logs syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	d := New(&out, Options{Total: 1000, Terminal: TerminalOff, Interval: time.Millisecond, Logger: logger, Now: clock.Now})
	d.SetFile("a.log")
	ran := make(chan error)
	go func() { ran <- d.Run(context.Background()) }()
	testcheck.Eventually(t, 10*time.Second, "three progress lines logged", func() bool {
		if strings.Count(logs.String(), "msg=progress ") >= 3 {
			return true
		}
		d.Add(10, 1)
		return false
	})
	d.Done()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	l := logs.String()
	if out.String() != "" || strings.Contains(l, "\r") {
		t.Fatalf("quiet mode wrote to w or redrew:\nw: %q\nlog: %q", out.String(), l)
	}
	for _, want := range []string{"total_bytes=1000", "file=a.log", "bytes_per_sec=", `msg="progress done"`} {
		if !strings.Contains(l, want) {
			t.Errorf("log lacks %s:\n%s", want, l)
		}
	}
	lines := strings.Split(strings.TrimSpace(l), "\n")
	if strings.Count(l, `msg="progress done"`) != 1 || !strings.Contains(lines[len(lines)-1], `msg="progress done"`) {
		t.Errorf("summary not once and last:\n%s", l)
	}
}

func TestQuietWithoutLoggerWritesOnlyTheSummary(t *testing.T) {
	clock := newClock()
	var out bytes.Buffer
	d := New(&out, Options{Terminal: TerminalOff, Now: clock.Now})
	d.Add(3*mib, 1_234_567)
	clock.Advance(90 * time.Second)
	d.draw()
	d.Done()
	want := "done: 3.00 MiB, 1,234,567 lines in 0:01:30 (34.1 KiB/s, 13,717 lines/s)\n"
	if out.String() != want {
		t.Fatalf("got %q\nwant %q", out.String(), want)
	}
}

func TestRunStopsOnCancelWithSummary(t *testing.T) {
	clock := newClock()
	clock.step = time.Millisecond
	var out syncbuf.Buffer
	d := New(&out, Options{Total: 4 * mib, Terminal: TerminalOn, Width: 80, Interval: time.Millisecond, Now: clock.Now})
	d.Add(mib, 10)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error)
	go func() { ran <- d.Run(ctx) }()
	testcheck.Eventually(t, 10*time.Second, "a line with an ETA drawn", func() bool {
		return strings.Contains(out.String(), "ETA")
	})
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	d.Done() // after Run stopped: nothing more
	got := out.String()
	last := got[strings.LastIndex(got, "\r"):]
	if !strings.HasPrefix(last, "\rstopped: 1.00 MiB of 4.00 MiB (25.0%), 10 lines in ") || !strings.HasSuffix(last, clearEOL+"\n") {
		t.Fatalf("last line %q", last)
	}
}

func TestConcurrentAddSumsExactly(t *testing.T) {
	const goroutines, adds = 64, 20_000
	var out, logs syncbuf.Buffer
	d := New(&out, Options{Terminal: TerminalOff, Interval: time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ran := make(chan error)
	go func() { ran <- d.Run(context.Background()) }()
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			d.SetFile("f" + string(rune('a'+g%26)))
			d.AddTotal(7 * adds)
			for range adds {
				d.Add(7, 1)
			}
		})
	}
	wg.Wait()
	d.Done()
	<-ran
	if b, l, tot := d.bytes.Load(), d.lines.Load(), d.total.Load(); b != 7*goroutines*adds || l != goroutines*adds || tot != b {
		t.Fatalf("bytes %d lines %d total %d", b, l, tot)
	}
	if !strings.Contains(logs.String(), "bytes=8960000 lines=1280000 ") {
		t.Fatalf("summary: %s", logs.String())
	}
}
