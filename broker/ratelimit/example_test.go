package ratelimit_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/broker/ratelimit"
)

// A worker checks the recipient's limit first: a long wait there means
// the job is deferred or folded into a digest rather than slept on. Only
// a job that will be sent soon takes a slot of the global limit, which it
// then waits for (Wait does the same as Reserve and a sleep). The clock
// is fixed so the output is too.
func Example() {
	url, stop := exampleNATS()
	defer stop()
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	cfg := bus.DefaultConfig()
	cfg.URL = url
	b, err := bus.Connect(ctx, cfg, "example", logger)
	if err != nil {
		panic(err)
	}
	defer b.Close()
	kv, err := b.KV(ctx, "ratelimits", 0)
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	lim := ratelimit.New(kv, logger, prometheus.NewRegistry(), func() time.Time { return now })

	limits := ratelimit.Config{
		Global:       ratelimit.Limit{Rate: 10, Per: time.Second, Burst: 2},
		PerRecipient: ratelimit.Limit{Rate: 20, Per: time.Hour, Burst: 1},
	}
	if err := limits.Validate("worker.rate_limit"); err != nil {
		panic(err)
	}
	for _, rcpt := range []string{"ops@example.com", "dev@example.com", "OPS@example.com", "sales@example.com"} {
		r, ok, err := lim.TryReserve(ctx, ratelimit.Recipient(rcpt), limits.PerRecipient, time.Minute)
		if err != nil {
			panic(err) // NATS unreachable: send nothing, retry the job later
		}
		if !ok {
			fmt.Printf("%s: next slot in %s, fold into a digest\n", rcpt, r.Wait)
			continue
		}
		// A real worker sleeps r.Wait here before asking the global limit.
		g, err := lim.Reserve(ctx, ratelimit.Global(), limits.Global)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: send in %s\n", rcpt, g.Wait)
	}
	// Output:
	// ops@example.com: send in 0s
	// dev@example.com: send in 0s
	// OPS@example.com: next slot in 3m0s, fold into a digest
	// sales@example.com: send in 100ms
}

// exampleNATS runs a JetStream server for the example; tests use
// internal/testserver/natstest, which needs a testing.TB.
func exampleNATS() (url string, stop func()) {
	dir, err := os.MkdirTemp("", "ratelimit-example")
	if err != nil {
		panic(err)
	}
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT,
		JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		panic(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		panic("nats server not ready")
	}
	return ns.ClientURL(), func() {
		ns.Shutdown()
		ns.WaitForShutdown()
		_ = os.RemoveAll(dir)
	}
}
