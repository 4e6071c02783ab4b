package webhook_test

import (
	"context"
	"fmt"
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
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/sinks/webhook"
)

type nopHistory struct{}

func (nopHistory) RecordNotifications(context.Context, []crossing.Record) error { return nil }

// The worker spaces each service's deliveries by that service's
// published limit (webhook.DefaultLimit): a burst of crossings for one
// page reaches every service whole, once each, and no service ever has
// to answer 429.
func TestDefaultLimitsKeepEveryServiceUnder429(t *testing.T) {
	logger := testenv.Logger(t)
	b, _ := testenv.NATS(t, logger)
	var specs []notify.ReceiverSpec
	var names []string
	fakes := map[string]*fake{}
	for _, s := range services(t) {
		if s.name == "webhook" {
			continue
		}
		recv := s.recv
		fakes[s.name] = s.fake
		names = append(names, s.name)
		specs = append(specs, notify.ReceiverSpec{Name: s.name, Kind: notify.KindOther, RateLimit: webhook.DefaultLimit(s.name),
			Open: func() (notify.Receiver, error) { return recv, nil }})
	}
	cfg := notify.DefaultConfig()
	cfg.Name, cfg.LockTTL, cfg.DeferDelay, cfg.AckWait = "w", 3*time.Second, 200*time.Millisecond, 20*time.Second
	cfg.RateLimit = ratelimit.Config{}
	cfg.Routing = notify.Routing{Receivers: names}
	w, err := notify.New(cfg, notify.Deps{Bus: b, Receivers: specs, History: nopHistory{}, Logger: logger, Registry: prometheus.NewRegistry()})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	const n = 4
	if _, err := b.JobsStream(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		// Every crossing its own page: only the limits space them.
		x := crossing.Crossing{Key: fmt.Sprintf("r.%d", i), Rule: "r", Site: "example.com", Path: fmt.Sprintf("/p/%d", i),
			Window: "1h", Threshold: 10, Count: 11, CrossedAt: time.Now()}
		body, _ := x.Marshal()
		m := nats.NewMsg(b.JobsSubject(bus.Key(x.Site, x.Path)))
		m.Data = body
		m.Header.Set(jetstream.MsgIDHeader, x.Key)
		if _, err := b.JS.PublishMsg(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	deliveredBy := time.Now().Add(40 * time.Second) // for all the services
	for name, f := range fakes {
		testcheck.Eventually(t, time.Until(deliveredBy), fmt.Sprintf("%s to get all %d crossings", name, n), func() error {
			accepted, throttled, _, _ := f.stats()
			if throttled > 0 {
				t.Fatalf("%s answered 429 %d times: the default limit %s is above the service's", name, throttled, webhook.DefaultLimit(name))
			}
			if accepted != n {
				return fmt.Errorf("%s got %d of %d", name, accepted, n)
			}
			return nil
		})
	}
	time.Sleep(500 * time.Millisecond)
	for name, f := range fakes {
		if accepted, throttled, _, _ := f.stats(); accepted != n || throttled != 0 {
			t.Errorf("%s: %d deliveries of %d crossings, %d 429s", name, accepted, n, throttled)
		}
	}
}
