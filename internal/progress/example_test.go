package progress_test

import (
	"context"
	"os"
	"sync/atomic"
	"time"

	"github.com/pagewatch/pagewatch/internal/progress"
)

// A backfill reads two rotated logs. The clock is fixed so the output is
// the same on every run; a real caller leaves Now nil and Terminal on
// auto, and gets the redrawn line when stderr is a terminal.
func Example() {
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var elapsed atomic.Int64 // seconds on the fake clock
	now := func() time.Time { return start.Add(time.Duration(elapsed.Load()) * time.Second) }

	d := progress.New(os.Stdout, progress.Options{Terminal: progress.TerminalOff, Now: now})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx) }()

	files := []struct {
		name  string
		size  int64 // bytes, as the reader would find with stat
		lines int64
	}{
		{"/var/log/nginx/access.log.2.gz", 48 << 20, 400_000},
		{"/var/log/nginx/access.log.1", 16 << 20, 130_000},
	}
	for _, f := range files {
		d.AddTotal(f.size) // the total grows as files are found
	}
	for _, f := range files {
		d.SetFile(f.name)
		lineLen := f.size / f.lines
		for range f.lines {
			d.Add(lineLen, 1) // per line, from the reader's loop
		}
		d.Add(f.size-lineLen*f.lines, 0)
		elapsed.Add(8)
	}
	d.Done()
	<-ran
	// Output:
	// done: 64.0 MiB, 530,000 lines in 0:00:16 (4.00 MiB/s, 33,125 lines/s)
}
