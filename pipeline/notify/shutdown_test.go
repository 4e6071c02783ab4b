package notify_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/testserver/smtptest"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

// On shutdown a worker stops fetching, finishes the send in flight,
// records and acks it, releases the page's lock, and hands the jobs it
// had not started straight back, so another worker sends them at once
// rather than after ack_wait.
func TestShutdownFinishesInFlightAndHandsBackTheRest(t *testing.T) {
	b := setup(t, smtptest.WithDelay(1500*time.Millisecond))
	b.cfg.Concurrency = 1
	b.cfg.AckWait = time.Minute // a job left unacked would come back only after this
	x := job(0)
	for i := 0; i < 3; i++ {
		y := x
		y.Key = x.Key + "." + string(rune('a'+i))
		b.publish(t, y, y.Key)
	}
	mailers := func() (notify.Mailer, error) { return mail.New(b.mail, b.logger) }
	w, err := notify.New(b.cfg, notify.Deps{Bus: b.bus, Mailers: mailers, History: b.ch.History(), Stats: b.ch.Traffic(), Logger: b.logger, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	time.Sleep(700 * time.Millisecond) // the first send is under way
	stopped := time.Now()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	took := time.Since(stopped)
	if n := len(b.smtp.Messages()); n != 1 {
		t.Fatalf("%d mails when the worker stopped, want the 1 in flight", n)
	}
	if took > b.cfg.DrainTimeout {
		t.Fatalf("stopping took %s, drain_timeout is %s", took, b.cfg.DrainTimeout)
	}
	locks, err := b.bus.KV(context.Background(), bus.BucketLocks, b.cfg.LockTTL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := locks.Get(context.Background(), bus.Key(x.Site, x.Path)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("page lock after shutdown: %v, want released", err)
	}
	if got := b.outcomes(t); !strings.Contains(got, "sent\t1") {
		t.Fatalf("history after shutdown: %q", got)
	}
	restarted := time.Now()
	b.start(t, 1)
	b.smtp.WaitForMessages(t, 3, 15*time.Second)
	if waited := time.Since(restarted); waited > b.cfg.AckWait/2 {
		t.Fatalf("the jobs not started came back after %s: they were not handed back", waited)
	}
	t.Logf("stopped %s after SIGTERM with the send in flight finished; the other 2 jobs sent %s after a new worker started", took.Round(time.Millisecond), time.Since(restarted).Round(time.Millisecond))
}
