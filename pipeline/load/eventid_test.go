package load_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pagewatch/pagewatch/domain/hit"
)

// The same lines published again in other messages, after JetStream's
// duplicate window (shortened to a second here): a file's batch by the
// tailer (same source, file and range, a recovery or a --from-start run),
// a file's lines re-batched differently, and a stdin batch retried with
// its Nats-Msg-Id. Each line's event id is derived from what it is, not
// from the message's sequence, so the counts do not change.
func TestSameLinesAgainCountOnce(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	s, err := b.bus.HitsStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.Duplicates = time.Second
	if _, err := b.bus.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Add(-5 * time.Minute)
	send := func(subject string, headers map[string]string, offsets ...int) {
		t.Helper()
		var enc hit.Encoder
		for _, off := range offsets {
			enc.Add(&hit.Hit{Time: at, Site: "example.com", Path: "/pricing", Method: "GET", Status: 200, Offset: uint64(off)})
		}
		msg := nats.NewMsg(b.bus.HitsSubject("test", subject))
		msg.Data = enc.Bytes()
		for k, v := range headers {
			msg.Header.Set(k, v)
		}
		if _, err := b.bus.JS.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	file := func(start, end int) map[string]string {
		return map[string]string{
			hit.HeaderSource: "vm/var/log/nginx/access.log",
			hit.HeaderFile:   "64768:1234:1024:0123456789abcdef",
			hit.HeaderStart:  fmt.Sprint(start), hit.HeaderEnd: fmt.Sprint(end),
		}
	}
	stdin := map[string]string{hit.HeaderStream: "stdin.1700000000", "Nats-Msg-Id": "web1.stdin.1700000000.7"}
	publishAll := func() {
		send("f", file(0, 300), 0, 100, 200)
		send("f", file(300, 500), 300, 400)
		send("stdin", stdin, 0, 50, 90)
	}
	publishAll()
	stop := b.run(t, b.ch.Hits())
	defer stop()
	b.waitCount(t, 8)

	time.Sleep(1100 * time.Millisecond) // past the duplicate window
	publishAll()
	// A gzipped copy of the file (another inode, the same head) read
	// again from its start, as --from-start does once the stream has
	// forgotten it: the same byte ranges, so hits and counts collapse.
	gz := file(0, 300)
	gz[hit.HeaderFile] = "0:0:1024:0123456789abcdef"
	send("backfill", gz, 0, 100, 200)
	// A line of a new batch, so that the wait below sees a load.
	send("f", file(500, 600), 500)
	b.waitCount(t, 9)
	time.Sleep(500 * time.Millisecond)
	b.waitCount(t, 9)
}
