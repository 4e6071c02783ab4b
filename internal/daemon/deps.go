package daemon

import (
	"context"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
)

// NATS connects to NATS, adds it to /readyz, and closes it when the
// command returns.
func (e *Env[C]) NATS(ctx context.Context) (*bus.Bus, error) {
	b, err := bus.Connect(ctx, e.Config.Common().NATS, "pagewatch "+e.name, e.Logger)
	if err != nil {
		return nil, err
	}
	e.closers = append(e.closers, func() { b.Close() })
	e.Ready("nats", b.Ping)
	return b, nil
}

// ClickHouse opens the store, applies the schema unless clickhouse.migrate
// is false, adds it to /readyz, and closes it when the command returns.
func (e *Env[C]) ClickHouse(ctx context.Context) (*clickhouse.Client, error) {
	c, err := clickhouse.Open(ctx, e.Config.Common().ClickHouse, e.Logger)
	if err != nil {
		return nil, err
	}
	e.closers = append(e.closers, func() { c.Close() })
	if e.Config.Common().ClickHouse.Migrate {
		if _, err := c.Migrate(ctx); err != nil {
			return nil, err
		}
	}
	e.Ready("clickhouse", c.Ping)
	return c, nil
}
