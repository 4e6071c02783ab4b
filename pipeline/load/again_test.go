package load_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pagewatch/pagewatch/domain/hit"
)

// TestLinesPublishedAgainCountOnce: NATS forgot two messages of a file
// after the loader had loaded them (it acknowledges writes before they
// are on disk), and the tailer, finding the stream behind it, published
// their lines again, cut into one message with a new line after them and
// marked with hit.HeaderAgain. The hits were always the same rows; the
// page's per-minute count must be the 6 lines too, not 5 + 6 (the
// forgotten messages' counts stay under their own keys). The marked
// message loaded a second time changes nothing either.
func TestLinesPublishedAgainCountOnce(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	if _, err := b.bus.HitsStream(ctx); err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Add(-5 * time.Minute)
	send := func(headers map[string]string, offsets ...int) {
		t.Helper()
		var enc hit.Encoder
		for _, off := range offsets {
			enc.Add(&hit.Hit{Time: at, Site: "example.com", Path: "/pricing", Method: "GET", Status: 200, Offset: uint64(off)})
		}
		msg := nats.NewMsg(b.bus.HitsSubject("test", "f"))
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
	send(file(0, 300), 0, 100, 200)
	send(file(300, 500), 300, 400)
	stop := b.run(t, b.ch.Hits())
	defer stop()
	b.waitCount(t, 5)

	again := file(0, 600)
	again[hit.HeaderAgain] = "500"
	send(again, 0, 100, 200, 300, 400, 500)
	b.waitCount(t, 6)
	send(again, 0, 100, 200, 300, 400, 500)
	send(file(600, 700), 600) // a load after it, to wait for
	b.waitCount(t, 7)
	time.Sleep(500 * time.Millisecond)
	b.assertPageCount(t, 7)
}
