package main

import (
	"context"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/broker/ratelimit"
	"github.com/pagewatch/pagewatch/config/workerconf"
	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/pipeline/report"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

// reportStage wires the reports: section: counts from ClickHouse, claims
// in NATS KV, delivery through the worker's receivers under the shared
// rate limits (lim, the limiter the worker's crossings wait on).
func reportStage(ctx context.Context, env *daemon.Env[workerconf.Config], b *bus.Bus, ch *clickhouse.Client, settings *mail.Settings, specs []notify.ReceiverSpec, lim *ratelimit.Limiter) (*report.Stage, error) {
	claims, err := b.KV(ctx, bus.BucketReports, report.ClaimsTTL)
	if err != nil {
		return nil, err
	}
	d := report.NewReceivers(specs, func(ctx context.Context, r report.Report, to []string) error {
		cfg, _ := settings.Get()
		s, err := mail.New(cfg, env.Logger)
		if err != nil {
			return err
		}
		defer s.Close()
		return s.SendReport(ctx, r, to)
	})
	d.Turn = func(ctx context.Context, spec notify.ReceiverSpec, to []string) error {
		return notify.Turn(ctx, lim, spec, env.Config.Worker.RateLimit, to)
	}
	return report.New(env.Config.Reports, report.Deps{Counts: ch.Counts(), Deliver: d, Claims: claims, Name: env.Config.Worker.Name, Logger: env.Logger, Registry: env.Registry})
}
