package notify_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/broker/ratelimit"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/pipeline/notify"
)

// Site A has 5,000 crossings queued ahead of site B's one. Pages are
// taken site by site in turn, so B's mail is among the first sends, not
// the 5,001st, while the global rate limit still holds at the SMTP
// server.
func TestOneSitesStormDoesNotStarveAnother(t *testing.T) {
	const (
		aCrossings = 5000
		aPages     = 1000
		rate       = 20 // per second, the global limit
		burst      = 5
	)
	b := setup(t)
	cfg := b.cfg
	cfg.RateLimit.Global = ratelimit.Limit{Rate: rate, Per: time.Second, Burst: burst}
	cfg.Concurrency = 4
	cfg.AckWait = time.Minute

	ctx := context.Background()
	if _, err := b.bus.JobsStream(ctx); err != nil {
		t.Fatal(err)
	}
	publish := func(x crossing.Crossing) {
		body, _ := x.Marshal()
		m := nats.NewMsg(b.bus.JobsSubject(bus.Key(x.Site, x.Path)))
		m.Data = body
		m.Header.Set(jetstream.MsgIDHeader, x.Key)
		if _, err := b.bus.JS.PublishMsgAsync(m); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < aCrossings; i++ {
		publish(crossing.Crossing{Key: fmt.Sprintf("storm.%d", i), Rule: "storm", Site: "a.example", Path: fmt.Sprintf("/a/%d", i%aPages),
			Window: "1h", Threshold: 10, Count: 11, CrossedAt: time.Now(), Recipients: []string{"a@example.com"}})
	}
	publish(crossing.Crossing{Key: "quiet.1", Rule: "quiet", Site: "b.example", Path: "/b/only",
		Window: "1h", Threshold: 10, Count: 11, CrossedAt: time.Now(), Recipients: []string{"b@example.com"}})
	select {
	case <-b.bus.JS.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		t.Fatal("publishing the jobs took over 30s")
	}

	start := time.Now()
	b.runWorker(t, cfg, []notify.ReceiverSpec{b.emailSpec()}, nil)
	var bAt time.Time
	var bIndex int
	testcheck.Eventually(t, 60*time.Second, "site B's mail", func() error {
		msgs := b.smtp.Messages()
		sort.Slice(msgs, func(i, j int) bool { return msgs[i].Began.Before(msgs[j].Began) })
		for i, m := range msgs {
			if strings.Contains(string(m.Data), "/b/only") {
				bAt, bIndex = m.Accepted, i
				return nil
			}
		}
		return fmt.Errorf("%d mails of site A so far", len(msgs))
	})
	time.Sleep(2 * time.Second) // more sends, to check the limit over a longer span
	msgs := b.smtp.Messages()
	times := make([]time.Time, len(msgs))
	for i, m := range msgs {
		times[i] = m.Began
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	const slack = 50 * time.Millisecond
	for i := range times {
		for j := i; j < len(times); j++ {
			w := times[j].Sub(times[i])
			if allowed := burst + int((w+slack).Seconds()*rate); j-i+1 > allowed {
				t.Fatalf("%d sends within %s, the global limit allows %d", j-i+1, w, allowed)
			}
		}
	}
	// In stream order B's would be send 5,001. Taken site by site, it
	// waits only for the fetcher to reach it (a few fetches of 256) and
	// for the sends already claimed then: a tenth of A's is plenty on
	// any machine, and far from 5,001.
	if bIndex >= aCrossings/10 {
		t.Errorf("site B's mail was send number %d; want it within the first %d", bIndex+1, aCrossings/10)
	}
	t.Logf("site B's one crossing behind site A's %d: mailed %s after the worker started, as send %d of %d in %s; global limit %d/s burst %d held",
		aCrossings, bAt.Sub(start).Round(time.Millisecond), bIndex+1, len(msgs), time.Since(start).Round(time.Millisecond), rate, burst)
}
