package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/broker/bus"
	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/pipeline/report"
	"github.com/pagewatch/pagewatch/sinks/clickhouse"
	"github.com/pagewatch/pagewatch/sinks/mail"
)

// claimsTTL keeps a report's claims past any period they could matter for.
const claimsTTL = 62 * 24 * time.Hour

// reportStage wires the reports: section: counts from ClickHouse, claims
// in NATS KV, delivery through the worker's receivers.
func reportStage(ctx context.Context, env *daemon.Env, b *bus.Bus, ch *clickhouse.Client, settings *mail.Settings, specs []notify.ReceiverSpec) (*report.Stage, error) {
	claims, err := b.KV(ctx, bus.BucketReports, claimsTTL)
	if err != nil {
		return nil, err
	}
	d := &reportDeliverer{settings: settings, env: env, specs: map[string]notify.ReceiverSpec{}}
	for _, s := range specs {
		d.specs[s.Name] = s
	}
	return report.New(env.Config.Reports, report.Deps{Counts: ch.Counts(), Deliver: d, Claims: claims, Name: env.Config.Worker.Name, Logger: env.Logger, Registry: env.Registry})
}

// reportDeliverer sends reports: email receivers as a report mail with
// its chart, the others as a notification with the report's text.
type reportDeliverer struct {
	env      *daemon.Env
	settings *mail.Settings
	specs    map[string]notify.ReceiverSpec
}

func (d *reportDeliverer) DeliverReport(ctx context.Context, receiver string, to []string, r report.Report) error {
	spec, ok := d.specs[receiver]
	if !ok {
		return fmt.Errorf("no receiver named %q", receiver)
	}
	if spec.Kind == notify.KindEmail {
		if len(to) == 0 {
			to = spec.To
		}
		if len(to) == 0 {
			return errors.New("no addresses: set the report's to, or the receiver's email.to")
		}
		cfg, _ := d.settings.Get()
		s, err := mail.New(cfg, d.env.Logger)
		if err != nil {
			return err
		}
		defer s.Close()
		return s.SendReport(ctx, r, to)
	}
	rcv, err := spec.Open()
	if err != nil {
		return err
	}
	return rcv.Send(ctx, reportNotification(r))
}

// reportNotification is a report as text for chats and webhooks.
func reportNotification(r report.Report) notify.Notification {
	return notify.Notification{Key: r.Key, Rule: "report-" + r.Name, Site: r.Site, Path: "(report " + r.Name + ")", Count: r.Total,
		Window: r.Period, CrossedAt: r.Cur.To, Subject: r.Subject(), Body: strings.Join(r.Lines(), "\n")}
}
