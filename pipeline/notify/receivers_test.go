package notify_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

// fakeReceiver counts deliveries by crossing key; fail decides, per
// attempt, what error (if any) a delivery meets.
type fakeReceiver struct {
	mu       sync.Mutex
	attempts map[string]int
	sent     map[string]int
	fail     func(key string, attempt int) error
}

func newFake(fail func(string, int) error) *fakeReceiver {
	return &fakeReceiver{attempts: map[string]int{}, sent: map[string]int{}, fail: fail}
}

func (f *fakeReceiver) Send(_ context.Context, n notify.Notification) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts[n.Key]++
	if f.fail != nil {
		if err := f.fail(n.Key, f.attempts[n.Key]); err != nil {
			return err
		}
	}
	f.sent[n.Key]++
	return nil
}

func (f *fakeReceiver) counts() (sent map[string]int, attempts map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sent, attempts = map[string]int{}, map[string]int{}
	for k, v := range f.sent {
		sent[k] = v
	}
	for k, v := range f.attempts {
		attempts[k] = v
	}
	return sent, attempts
}

func (f *fakeReceiver) spec(name string) notify.ReceiverSpec {
	return notify.ReceiverSpec{Name: name, Kind: notify.KindOther, Open: func() (notify.Receiver, error) { return f, nil }}
}

// runWorker runs one worker with the given receivers until the test ends.
func (b *bundle) runWorker(t *testing.T, cfg notify.Config, specs []notify.ReceiverSpec, clock func() time.Time) {
	t.Helper()
	w, err := notify.New(cfg, notify.Deps{Bus: b.bus, Receivers: specs, History: b.ch.History(), Stats: b.ch.Traffic(),
		Logger: b.logger, Registry: prometheus.NewRegistry(), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func (b *bundle) emailSpec() notify.ReceiverSpec {
	return notify.ReceiverSpec{Name: notify.DefaultReceiver, Kind: notify.KindEmail,
		Open: func() (notify.Receiver, error) { return mail.New(b.mail, b.logger) }}
}

// deadLetters returns the dead letters of notification jobs: receiver → reasons.
func (b *bundle) deadLetters(t *testing.T) map[string][]string {
	t.Helper()
	ctx := context.Background()
	s, err := b.bus.DeadLetterStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{b.bus.DeadLetterSubject("jobs")}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for {
		batch, err := c.FetchNoWait(100)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			out[m.Headers().Get(bus.HeaderDeadReceiver)] = append(out[m.Headers().Get(bus.HeaderDeadReceiver)], m.Headers().Get(bus.HeaderDeadReason))
		}
		if n == 0 {
			return out
		}
	}
}

// A crossing routed to four receivers: email and "flaky" (which fails
// twice, then works) each deliver it exactly once; "down" keeps failing
// and is dead-lettered with its reason once give_up_after has passed;
// "refuses" fails for good at once and is dead-lettered. Neither of the
// failing two holds back or repeats the others.
func TestFailingReceiverNeitherBlocksNorRepeatsTheOthers(t *testing.T) {
	b := setup(t)
	flaky := newFake(func(_ string, attempt int) error {
		if attempt <= 2 {
			return errors.New("503 from flaky")
		}
		return nil
	})
	down := newFake(func(string, int) error { return errors.New("dial tcp: connection refused") })
	refuses := newFake(func(string, int) error { return notify.Permanent(errors.New("404 no such channel")) })
	specs := []notify.ReceiverSpec{b.emailSpec(), flaky.spec("flaky"), down.spec("down"), refuses.spec("refuses")}
	specs[2].GiveUpAfter = 3 * time.Second
	cfg := b.cfg
	cfg.Routing = notify.Routing{Receivers: []string{"email", "flaky", "down", "refuses"}}
	const n = 5
	for i := 0; i < n; i++ {
		x := job(i)
		b.publish(t, x, x.Key)
	}
	b.runWorker(t, cfg, specs, nil)

	b.smtp.WaitForMessages(t, n, 20*time.Second)
	testcheck.Eventually(t, 20*time.Second, "flaky to get every crossing", func() error {
		if sent, _ := flaky.counts(); len(sent) != n {
			return fmt.Errorf("%d of %d", len(sent), n)
		}
		return nil
	})
	testcheck.Eventually(t, 30*time.Second, "the dead letters of down and refuses", func() error {
		dl := b.deadLetters(t)
		if len(dl["down"]) != n || len(dl["refuses"]) != n {
			return fmt.Errorf("%d for down, %d for refuses", len(dl["down"]), len(dl["refuses"]))
		}
		return nil
	})
	time.Sleep(time.Second) // would anything be repeated?
	if got := len(b.smtp.Messages()); got != n {
		t.Errorf("%d mails for %d crossings", got, n)
	}
	sent, attempts := flaky.counts()
	for k, c := range sent {
		if c != 1 || attempts[k] != 3 {
			t.Errorf("flaky: %s delivered %d times in %d attempts, want once in 3", k, c, attempts[k])
		}
	}
	if _, att := refuses.counts(); len(att) != n {
		t.Errorf("refuses was tried for %d crossings", len(att))
	} else {
		for k, c := range att {
			if c != 1 {
				t.Errorf("refuses: %s tried %d times, want once", k, c)
			}
		}
	}
	dl := b.deadLetters(t)
	if r := dl["down"][0]; !strings.Contains(r, "gave up after 3s") || !strings.Contains(r, "connection refused") {
		t.Errorf("down's dead-letter reason %q", r)
	}
	if r := dl["refuses"][0]; !strings.Contains(r, "404 no such channel") {
		t.Errorf("refuses' dead-letter reason %q", r)
	}
	if len(dl) != 2 {
		t.Errorf("dead letters for %d receivers, want 2: %v", len(dl), dl)
	}
	testcheck.Eventually(t, 10*time.Second, "the history", func() error {
		got := b.chSrv.Query(t, "SELECT outcome, count() FROM pagewatch.notifications GROUP BY outcome ORDER BY outcome")
		if !strings.Contains(got, "dead_lettered\t10") || !strings.Contains(got, "sent\t10") {
			return fmt.Errorf("%q", got)
		}
		return nil
	})
}
