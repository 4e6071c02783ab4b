package notify_test

// Helpers of BenchmarkBacklog (bench_test.go).

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/internal/testserver/smtptest"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

// memHistory is the notifications history, counted in memory.
type memHistory struct {
	mu       sync.Mutex
	outcomes map[crossing.Outcome]int
	perKey   map[string]map[crossing.Outcome]int
	// gaps: from a job's deferral to its next outcome, i.e. how long the
	// deferral actually kept it away (the worker asks for 0.5–1.5 ×
	// worker.defer_delay).
	lastDefer map[string]time.Time
	gaps      []time.Duration
}

func newMemHistory() *memHistory {
	return &memHistory{outcomes: map[crossing.Outcome]int{}, perKey: map[string]map[crossing.Outcome]int{},
		lastDefer: map[string]time.Time{}}
}

func (h *memHistory) RecordNotifications(ctx context.Context, rs []crossing.Record) error {
	for _, r := range rs {
		_ = h.RecordNotification(ctx, r)
	}
	return nil
}

func (h *memHistory) RecordNotification(_ context.Context, r crossing.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.outcomes[r.Outcome]++
	m := h.perKey[r.Crossing.Key]
	if m == nil {
		m = map[crossing.Outcome]int{}
		h.perKey[r.Crossing.Key] = m
	}
	m[r.Outcome]++
	if at, ok := h.lastDefer[r.Crossing.Key]; ok {
		h.gaps = append(h.gaps, r.At.Sub(at))
		delete(h.lastDefer, r.Crossing.Key)
	}
	if r.Outcome == crossing.Deferred {
		h.lastDefer[r.Crossing.Key] = r.At
	}
	return nil
}

func (h *memHistory) snapshot() map[crossing.Outcome]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.outcomes)
}

func (h *memHistory) count(o crossing.Outcome) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.outcomes[o]
}

// runSMTPFloor sends n mails over the given number of connections and
// returns the makespan and the mean number of sends in flight.
func runSMTPFloor(b *testing.B, n, senders int) (time.Duration, float64) {
	b.StopTimer()
	logger := slog.New(slog.NewTextHandler(b.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	sm := smtptest.Start(b, smtptest.WithDelay(benchSendDelay))
	mc := mail.DefaultConfig()
	mc.Transport = "smtp"
	mc.SMTP.Host, mc.SMTP.Port, mc.SMTP.TLS = sm.Host, sm.Port, "none"
	work := make(chan int, n)
	for i := range n {
		work <- i
	}
	close(work)
	var wg sync.WaitGroup
	b.StartTimer()
	start := time.Now()
	for range senders {
		s, err := mail.New(mc, logger)
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			defer s.Close()
			for i := range work {
				err := s.Send(context.Background(), notify.Notification{Key: fmt.Sprintf("floor.%d", i), Rule: "outage",
					Site: "example.com", Path: fmt.Sprintf("/page/%d", i), Window: "1h", Threshold: 1000, Count: 1001,
					CrossedAt: start, Recipients: []string{"ops@example.com"}})
				if err != nil {
					b.Error(err)
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	var last time.Time
	var busy time.Duration
	msgs := sm.Messages()
	for _, m := range msgs {
		last = maxTime(last, m.Accepted)
		busy += m.Accepted.Sub(m.Began)
	}
	if len(msgs) != n {
		b.Fatalf("%d mails, want %d", len(msgs), n)
	}
	makespan := last.Sub(start)
	return makespan, busy.Seconds() / makespan.Seconds()
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// messageID returns the Message-ID header of a raw message.
func messageID(data []byte) string {
	head, _, _ := strings.Cut(string(data), "\r\n\r\n")
	for _, line := range strings.Split(head, "\r\n") {
		name, value, ok := strings.Cut(line, ":")
		if ok && strings.EqualFold(name, "Message-ID") {
			return strings.TrimSpace(value)
		}
	}
	return ""
}

// counterValue reads one labelled counter from a registry.
func counterValue(tb testing.TB, reg *prometheus.Registry, name, label, value string) float64 {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	tb.Fatalf("no %s{%s=%q} in the registry", name, label, value)
	return 0
}
