package visitor_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/pipeline/visitor"
)

// A tailer makes one Salts and gives each goroutine reading lines a
// Keyer; each hit's key comes from its line's time, address and user
// agent, which then go no further.
func Example() {
	url, stop := exampleNATS()
	defer stop()
	ctx := context.Background()
	cfg := bus.DefaultConfig()
	cfg.URL = url
	b, err := bus.Connect(ctx, cfg, "example", slog.New(slog.DiscardHandler))
	if err != nil {
		panic(err)
	}
	defer b.Close()

	salts := visitor.NewSalts(b, prometheus.NewRegistry(), nil)
	k := salts.Keyer()
	key := func(at, addr, ua string) uint64 {
		t, _ := time.Parse(time.RFC3339, at)
		// A deadline, so that NATS being down costs a line its key
		// rather than stalls the tailer.
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		v, err := k.Key(ctx, t, []byte(addr), []byte(ua))
		if err != nil {
			return visitor.NoKey
		}
		return v
	}
	const ua = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
	morning := key("2026-11-28T09:00:00Z", "203.0.113.7", ua)
	evening := key("2026-11-28T21:00:00Z", "203.0.113.7", ua)
	neighbour := key("2026-11-28T21:00:00Z", "203.0.113.8", ua)
	nextDay := key("2026-11-29T09:00:00Z", "203.0.113.7", ua)
	fmt.Println("one visitor all day:", morning == evening)
	fmt.Println("another address is another visitor:", neighbour != morning)
	fmt.Println("the next day, a new visitor:", nextDay != morning)
	// Output:
	// one visitor all day: true
	// another address is another visitor: true
	// the next day, a new visitor: true
}

// exampleNATS runs a JetStream server for the example; tests use
// internal/testserver/natstest, which needs a testing.TB.
func exampleNATS() (url string, stop func()) {
	dir, err := os.MkdirTemp("", "visitor-example")
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
