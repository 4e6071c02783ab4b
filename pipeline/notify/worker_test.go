package notify_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/broker/lock"
	"github.com/pagewatch/pagewatch/broker/ratelimit"
	"github.com/pagewatch/pagewatch/domain/crossing"
	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testenv"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/internal/testserver/smtptest"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

type bundle struct {
	bus    *bus.Bus
	ch     *clickhouse.Client
	chSrv  *clickhousetest.Server
	smtp   *smtptest.Server
	cfg    notify.Config
	mail   mail.Config
	logger *slog.Logger
}

func setup(t *testing.T, smtpOpts ...smtptest.Option) *bundle {
	t.Helper()
	logger := testenv.Logger(t)
	b, _ := testenv.NATS(t, logger)
	c, srv := testenv.ClickHouse(t, logger)
	sm := smtptest.Start(t, smtpOpts...)
	mc := mail.DefaultConfig()
	mc.Transport = "smtp"
	mc.SMTP.Host, mc.SMTP.Port, mc.SMTP.TLS = sm.Host, sm.Port, "none"
	cfg := notify.DefaultConfig()
	cfg.Name = "w-test"
	cfg.LockTTL = 3 * time.Second
	cfg.DeferDelay = 200 * time.Millisecond
	cfg.AckWait = 10 * time.Second
	// Most tests send bursts to one address; limits_test.go turns them on.
	cfg.RateLimit = ratelimit.Config{}
	return &bundle{bus: b, ch: c, chSrv: srv, smtp: sm, cfg: cfg, mail: mc, logger: logger}
}

// start runs n workers until the test ends.
func (b *bundle) start(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		cfg := b.cfg
		cfg.Name = fmt.Sprintf("w%d", i)
		mailers := func() (notify.Mailer, error) { return mail.New(b.mail, b.logger) }
		w, err := notify.New(cfg, notify.Deps{Bus: b.bus, Mailers: mailers, History: b.ch.History(), Stats: b.ch.Traffic(), Logger: b.logger, Registry: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = w.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
	}
}

func job(i int) crossing.Crossing {
	return crossing.Crossing{Key: fmt.Sprintf("rule.%024x.%d", i%3, i), Rule: "rule", Site: "example.com", Path: fmt.Sprintf("/page/%d", i%3),
		Window: "1h", Threshold: 1000, Count: 1001, CrossedAt: time.Now(), Recipients: []string{"ops@example.com"}}
}

// publish enqueues a job; msgID "" lets the same crossing in twice, as a
// sweeper retry beyond the dedup window would.
func (b *bundle) publish(t *testing.T, x crossing.Crossing, msgID string) {
	t.Helper()
	ctx := context.Background()
	if _, err := b.bus.JobsStream(ctx); err != nil {
		t.Fatal(err)
	}
	body, _ := x.Marshal()
	m := nats.NewMsg(b.bus.JobsSubject(bus.Key(x.Site, x.Path)))
	m.Data = body
	if msgID != "" {
		m.Header.Set(jetstream.MsgIDHeader, msgID)
	}
	if _, err := b.bus.JS.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
}

func (b *bundle) outcomes(t *testing.T) string {
	return b.chSrv.Query(t, "SELECT outcome, count() FROM pagewatch.notifications GROUP BY outcome ORDER BY outcome")
}

func TestEachCrossingMailedOnce(t *testing.T) {
	b := setup(t)
	b.start(t, 3)
	for i := 0; i < 30; i++ {
		b.publish(t, job(i), "")
		b.publish(t, job(i), "") // the same crossing again
	}
	msgs := b.smtp.WaitForMessages(t, 30, 30*time.Second)
	time.Sleep(500 * time.Millisecond) // would a 31st arrive?
	if got := len(b.smtp.Messages()); got != 30 {
		t.Fatalf("got %d mails for 30 crossings", got)
	}
	ids := map[string]bool{}
	for _, m := range msgs {
		for _, line := range strings.Split(string(m.Data), "\r\n") {
			if strings.HasPrefix(line, "Message-Id:") || strings.HasPrefix(line, "Message-ID:") {
				ids[line] = true
			}
		}
	}
	if len(ids) != 30 {
		t.Fatalf("want 30 distinct Message-IDs, got %d", len(ids))
	}
	testcheck.Eventually(t, 10*time.Second, "30 duplicates in the history", func() error {
		if h := b.outcomes(t); !strings.Contains(h, "duplicate\t30") {
			return fmt.Errorf("history: %q", h)
		}
		return nil
	})
}

func TestLockedPageIsDeferredThenSent(t *testing.T) {
	b := setup(t)
	b.start(t, 1)
	ctx := context.Background()
	kv, err := b.bus.KV(ctx, bus.BucketLocks, b.cfg.LockTTL)
	if err != nil {
		t.Fatal(err)
	}
	x := job(1)
	lease, err := lock.Acquire(ctx, kv, bus.Key(x.Site, x.Path), "someone-else", b.cfg.LockTTL, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.publish(t, x, x.Key)
	time.Sleep(time.Second)
	if n := len(b.smtp.Messages()); n != 0 {
		t.Fatalf("mail sent while the page was locked")
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	b.smtp.WaitForMessages(t, 1, 10*time.Second)
	if !strings.Contains(b.outcomes(t), "deferred\t") {
		t.Fatalf("no deferral recorded: %q", b.outcomes(t))
	}
}

func TestDeadHoldersLockLapses(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	kv, err := b.bus.KV(ctx, bus.BucketLocks, b.cfg.LockTTL)
	if err != nil {
		t.Fatal(err)
	}
	x := job(2)
	// A worker that took the lock and was SIGKILLed: nobody renews it.
	if _, err := kv.Create(ctx, bus.Key(x.Site, x.Path), []byte("dead-worker")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	b.start(t, 1)
	b.publish(t, x, x.Key)
	b.smtp.WaitForMessages(t, 1, 4*b.cfg.LockTTL)
	if waited := time.Since(start); waited > 3*b.cfg.LockTTL {
		t.Fatalf("lock held %s by a dead worker, lease is %s", waited, b.cfg.LockTTL)
	}
}

func TestPermanentFailureIsTerminatedAndRecorded(t *testing.T) {
	b := setup(t, smtptest.WithFailures(550, 1))
	b.start(t, 1)
	b.publish(t, job(3), "")
	testcheck.Eventually(t, 10*time.Second, "the failure in the history", func() error {
		if h := b.outcomes(t); !strings.Contains(h, "failed\t1") {
			return fmt.Errorf("history: %q", h)
		}
		return nil
	})
	if got := b.chSrv.Query(t, "SELECT smtp_code FROM pagewatch.notifications WHERE outcome = 'failed'"); got != "550\n" {
		t.Fatalf("smtp_code: %q", got)
	}
	time.Sleep(time.Second)
	if n := len(b.smtp.Messages()); n != 0 {
		t.Fatalf("a permanently failed job was retried: %d mails", n)
	}
	if !strings.Contains(b.outcomes(t), "dead_lettered\t1") {
		t.Fatalf("history: %q", b.outcomes(t))
	}
	dead, err := b.bus.JS.Stream(context.Background(), b.bus.DeadLetterStreamName())
	if err != nil {
		t.Fatal(err)
	}
	m, err := dead.GetLastMsgForSubject(context.Background(), b.bus.DeadLetterSubject("jobs"))
	if err != nil {
		t.Fatalf("no dead letter: %v", err)
	}
	if x, err := crossing.Unmarshal(m.Data); err != nil || x.Key != job(3).Key {
		t.Fatalf("dead letter holds %q (%v)", m.Data, err)
	}
	if reason := m.Header.Get(bus.HeaderDeadReason); !strings.Contains(reason, "550") {
		t.Fatalf("dead letter reason %q", reason)
	}
}

func TestTemporaryFailureIsRetried(t *testing.T) {
	b := setup(t, smtptest.WithFailures(451, 1))
	b.start(t, 1)
	b.publish(t, job(4), "")
	b.smtp.WaitForMessages(t, 1, 15*time.Second)
	time.Sleep(time.Second) // would a second copy follow?
	if n := len(b.smtp.Messages()); n != 1 {
		t.Fatalf("a 4xx then success gave %d mails, want 1", n)
	}
}

// The mail shows the page's views per minute (an inline PNG) and its top
// referrers over the rule's window, read from ClickHouse.
func TestMailCarriesChartAndReferrers(t *testing.T) {
	b := setup(t)
	x := job(0)
	x.CrossedAt = time.Now().UTC()
	batch := hit.Batch{Seq: 1}
	for i := 0; i < 30; i++ {
		batch.Hits = append(batch.Hits, hit.Hit{Time: x.CrossedAt.Add(-time.Duration(i) * time.Minute), Site: x.Site, Path: x.Path,
			Referer: "https://news.example/<b>story</b>", Offset: uint64(i)})
	}
	if err := b.ch.Hits().InsertHits(context.Background(), []hit.Batch{batch}); err != nil {
		t.Fatal(err)
	}
	b.publish(t, x, x.Key)
	b.start(t, 1)
	msg := b.smtp.WaitForMessages(t, 1, 15*time.Second)[0]
	data := string(msg.Data)
	for _, want := range []string{"image/png", "cid:", "news.example/&lt;b&gt;story&lt;/b&gt;"} {
		if !strings.Contains(data, want) {
			t.Errorf("mail lacks %q", want)
		}
	}
	if strings.Contains(data, "<b>story</b>") && !strings.Contains(data, "text/plain") {
		t.Error("referrer HTML not escaped")
	}
}

func TestDigestAndRuleTextsReachTheMail(t *testing.T) {
	b := setup(t)
	d := job(0)
	d.Key, d.Path, d.Count = "blog.digest.0123456789abcdef01234567", "/blog/*", 3
	d.Digest = &crossing.Digest{Total: 3, Items: []crossing.Item{
		{Key: "blog.a.1", Path: "/blog/a", Threshold: 1000, Count: 3000},
		{Key: "blog.b.1", Path: "/blog/b", Threshold: 1000, Count: 2000},
		{Key: "blog.c.1", Path: "/blog/c", Threshold: 1000, Count: 1500},
	}}
	own := job(1)
	own.Subject, own.Body = "Pricing is on fire", "Tell sales."
	b.publish(t, d, d.Key)
	b.publish(t, own, own.Key)
	b.start(t, 1)
	msgs := b.smtp.WaitForMessages(t, 2, 15*time.Second)
	all := string(msgs[0].Data) + string(msgs[1].Data)
	for _, want := range []string{"Subject: [pagewatch] 3 pages matching /blog/* passed their thresholds", "/blog/c (threshold 1,000)", "Subject: Pricing is on fire", "Tell sales."} {
		if !strings.Contains(all, want) {
			t.Errorf("mails lack %q", want)
		}
	}
}
