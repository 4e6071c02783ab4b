package tail_test

import (
	"context"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/pipeline/tail"
)

// --from-start run again after the stream's duplicate window has passed
// (shortened to a second here): a file's publishes are conditional on
// its subject's position, not on message ids, so the second run finds
// every rotation and the live file published and publishes no line
// again, with rotations and new lines in between.
func TestFromStartTwiceAfterDedupWindow(t *testing.T) {
	b := setup(t)
	files := b.siblingsOnDisk(t)
	if err := b.runBackfill(context.Background(), t, nil, tail.BackfillOptions{Only: true}); err != nil {
		t.Fatal(err)
	}
	b.exactly(t, 7000, files...)

	ctx := context.Background()
	s, err := b.bus.JS.Stream(ctx, b.bus.HitsStreamName())
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.Duplicates = time.Second
	if _, err := b.bus.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)

	// A rotation and new lines since the first run.
	rename(t, b.log+".1", b.log+".1.old")
	rename(t, b.log, b.log+".1")
	appendLines(t, b.log, b.lines[7000:7400])
	files = []file{files[0], files[1], readLog(t, b.log+".1.old"), readLog(t, b.log+".1"), readLog(t, b.log)}
	if err := b.runBackfill(context.Background(), t, nil, tail.BackfillOptions{Only: true}); err != nil {
		t.Fatal(err)
	}
	b.exactly(t, 7400, files...)
}
