package notify_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/broker/ratelimit"
	"github.com/pagewatch/pagewatch/domain/crossing"
)

// The global limit holds across three workers, measured where it matters:
// at the SMTP server. 5 per second with a burst of 3: over any window of
// length W the server may see at most 3 + 5W sends (a little slack for
// the time between a slot and the server's reply).
func TestGlobalRateLimitHoldsAcrossWorkers(t *testing.T) {
	b := setup(t)
	b.cfg.RateLimit.Global = ratelimit.Limit{Rate: 5, Per: time.Second, Burst: 3}
	const n = 30
	for i := 0; i < n; i++ {
		x := job(i)
		x.Path = fmt.Sprintf("/page/%d", i) // every job its own page: only the limit spaces them
		b.publish(t, x, x.Key)
	}
	b.start(t, 3)
	msgs := b.smtp.WaitForMessages(t, n, 30*time.Second)
	times := make([]time.Time, len(msgs))
	for i, m := range msgs {
		times[i] = m.Began
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	// The times are when the SMTP server saw each send begin, which is
	// the limiter's grant plus the time to dial and talk: on a loaded
	// machine two sends granted 200 ms apart can arrive 50 ms apart. The
	// slack takes that jitter; a limiter that did not hold would show
	// tens of sends within it, and the span below must still be that of
	// 27 sends at 5 a second.
	const slack = 300 * time.Millisecond
	for i := range times {
		for j := i; j < len(times); j++ {
			w := times[j].Sub(times[i])
			allowed := 3 + int((w+slack).Seconds()*5)
			if j-i+1 > allowed {
				t.Fatalf("%d sends within %s, limit allows %d", j-i+1, w, allowed)
			}
		}
	}
	span := times[len(times)-1].Sub(times[0])
	t.Logf("%d mails over %s (%.1f/s; limit 5/s after a burst of 3)", n, span.Round(time.Millisecond), float64(n-1)/span.Seconds())
	if len(msgs) != n {
		t.Fatalf("%d mails, want %d", len(msgs), n)
	}
	if least := time.Duration(n-3) * time.Second / 5; span < least-slack {
		t.Fatalf("%d mails over %s; after a burst of 3 at 5/s they need %s", n, span, least)
	}
}

// A recipient over its limit gets the rest later, not never: the jobs
// wait their turn in JetStream (outcome rate_limited) and are all mailed.
func TestRecipientOverLimitWaitsItsTurn(t *testing.T) {
	b := setup(t)
	b.cfg.RateLimit.PerRecipient = ratelimit.Limit{Rate: 1, Per: 2 * time.Second, Burst: 2}
	b.cfg.AckWait = 8 * time.Second // waits over 2s go back to the queue
	const n = 5
	for i := 0; i < n; i++ {
		x := job(i)
		b.publish(t, x, x.Key)
	}
	b.start(t, 2)
	msgs := b.smtp.WaitForMessages(t, n, 30*time.Second)
	if len(msgs) != n {
		t.Fatalf("%d mails, want %d", len(msgs), n)
	}
	first, last := msgs[0].Began, msgs[len(msgs)-1].Began
	if span := last.Sub(first); span < 5*time.Second {
		t.Fatalf("5 mails to one address within %s; 1 per 2s after a burst of 2 needs at least 6s", span)
	}
	if got := b.outcomes(t); !strings.Contains(got, string(crossing.RateLimited)) {
		t.Fatalf("no rate_limited outcome in the history: %v", got)
	}
}
