// Package testenv connects pagewatch's own clients to the real test servers
// of internal/testserver, so each package's setup(t) stays a few lines.
package testenv

import (
	"context"
	"log/slog"
	"testing"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/internal/testserver/natstest"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
)

// Logger writes warnings and errors to the test's output.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// NATS starts an embedded JetStream server and connects a Bus to it.
func NATS(t testing.TB, logger *slog.Logger) (*bus.Bus, *natstest.Server) {
	t.Helper()
	ns := natstest.Start(t)
	return NATSClient(t, ns.URL, logger), ns
}

// NATSClient connects another Bus to a running server, e.g. one per
// simulated process.
func NATSClient(t testing.TB, url string, logger *slog.Logger) *bus.Bus {
	t.Helper()
	cfg := bus.DefaultConfig()
	cfg.URL = url
	b, err := bus.Connect(context.Background(), cfg, t.Name(), logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// ClickHouse starts a clickhouse-server, opens a client on database
// "pagewatch" and applies the schema.
func ClickHouse(t testing.TB, logger *slog.Logger) (*clickhouse.Client, *clickhousetest.Server) {
	t.Helper()
	srv := clickhousetest.Start(t)
	c := ClickHouseClient(t, srv.Addr, logger)
	if _, err := c.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c, srv
}

// ClickHouseClient opens another client on database "pagewatch" of a
// running server.
func ClickHouseClient(t testing.TB, addr string, logger *slog.Logger) *clickhouse.Client {
	t.Helper()
	cfg := clickhouse.DefaultConfig()
	cfg.Addr = []string{addr}
	c, err := clickhouse.Open(context.Background(), cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
