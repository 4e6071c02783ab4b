package notify_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/broker/ratelimit"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testenv"
	"github.com/pagewatch/pagewatch/internal/testserver/smtptest"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

// Two worker processes fetch jobs of one page; the one that finds the page
// locked hands its jobs to the holder instead of deferring them. Every
// crossing is still mailed once and the page's sends never overlap.
func TestLockedPageIsHandedToTheHolder(t *testing.T) {
	logger := testenv.Logger(t)
	pub, ns := testenv.NATS(t, logger)
	sm := smtptest.Start(t, smtptest.WithDelay(30*time.Millisecond))
	ctx := context.Background()
	stream, err := pub.JobsStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	site, path := "example.com", "/pricing"
	keyOf := map[string]string{} // Message-ID → crossing key
	for i := 0; i < n; i++ {
		x := crossing.Crossing{Key: fmt.Sprintf("rule.%s.%d", bus.Key(site, path), i), Rule: "rule", Site: site, Path: path,
			Window: "1h", Threshold: 1000, Count: 1001, CrossedAt: time.Now(), Recipients: []string{"ops@example.com"}}
		keyOf["<"+crossing.MessageID(x.Key)+">"] = x.Key
		body, _ := x.Marshal()
		m := nats.NewMsg(pub.JobsSubject(bus.Key(site, path)))
		m.Data = body
		m.Header.Set(jetstream.MsgIDHeader, x.Key)
		if _, err := pub.JS.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}

	mc := mail.DefaultConfig()
	mc.Transport = "smtp"
	mc.SMTP.Host, mc.SMTP.Port, mc.SMTP.TLS = sm.Host, sm.Port, "none"
	hist := newMemHistory()
	regs := make([]*prometheus.Registry, 2)
	for i := range regs {
		cfg := notify.DefaultConfig()
		cfg.Name = fmt.Sprintf("w%d", i)
		cfg.Concurrency = 2
		cfg.Prefetch = 4 // small, so both processes fetch jobs of the page
		cfg.LockTTL = 3 * time.Second
		cfg.AckWait = 10 * time.Second
		cfg.RateLimit = ratelimit.Config{}
		regs[i] = prometheus.NewRegistry()
		mailers := func() (notify.Mailer, error) { return mail.New(mc, logger) }
		w, err := notify.New(cfg, notify.Deps{Bus: testenv.NATSClient(t, ns.URL, logger), Mailers: mailers, History: hist, Logger: logger, Registry: regs[i]})
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { _ = w.Run(rctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
	}

	sm.WaitForMessages(t, n, 30*time.Second)
	// Every job acked, the handed ones too (by the process they were
	// handed to, on the reply subject of the other's delivery).
	testcheck.Eventually(t, 10*time.Second, "every job acked", func() error {
		info, err := stream.Info(ctx)
		if err == nil && info.State.Msgs == 0 {
			return nil
		}
		return fmt.Errorf("jobs stream still holds messages (%v, %v); outcomes %v", info, err, hist.snapshot())
	})
	time.Sleep(500 * time.Millisecond) // would another mail arrive?
	msgs := sm.Messages()
	mailed := map[string]int{}
	for _, m := range msgs {
		mailed[keyOf[messageID(m.Data)]]++
	}
	if len(msgs) != n || len(mailed) != n || mailed[""] != 0 {
		t.Fatalf("%d mails for %d crossings, %d distinct", len(msgs), n, len(mailed))
	}
	sort.Slice(msgs, func(i, j int) bool { return msgs[i].Began.Before(msgs[j].Began) })
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Began.Before(msgs[i-1].Accepted) {
			t.Fatalf("two sends of the page overlapped: %s–%s and %s–%s", msgs[i-1].Began.Format(time.StampMicro),
				msgs[i-1].Accepted.Format(time.StampMicro), msgs[i].Began.Format(time.StampMicro), msgs[i].Accepted.Format(time.StampMicro))
		}
	}

	time.Sleep(time.Second) // the history is written in batches
	outcomes := hist.snapshot()
	t.Logf("outcomes: %v", outcomes)
	if outcomes[crossing.Sent] != n || outcomes[crossing.Duplicate] != 0 {
		t.Fatalf("outcomes %v, want %d sent and no duplicate", outcomes, n)
	}
	if outcomes[crossing.HandedOff] == 0 {
		t.Fatalf("no job was handed off: %v", outcomes)
	}
	if d := outcomes[crossing.Deferred]; d > 2 {
		t.Errorf("%d deferrals, want (near) none", d)
	}
	handed := 0.0
	for _, reg := range regs {
		handed += counterValue(t, reg, "pagewatch_worker_jobs_total", "outcome", string(crossing.HandedOff))
	}
	if int(handed) != outcomes[crossing.HandedOff] {
		t.Errorf("metrics say %v hand-offs, history %d", handed, outcomes[crossing.HandedOff])
	}
	hist.mu.Lock()
	defer hist.mu.Unlock()
	for key, o := range hist.perKey {
		if o[crossing.HandedOff] > 1 {
			t.Errorf("%s handed off %d times, want at most once", key, o[crossing.HandedOff])
		}
	}
}
