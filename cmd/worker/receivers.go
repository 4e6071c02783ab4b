package main

import (
	"fmt"

	"github.com/pagewatch/pagewatch/config/workerconf"
	"github.com/pagewatch/pagewatch/internal/daemon"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/sinks/mail"
	"github.com/pagewatch/pagewatch/sinks/webhook"
)

// receiverSpecs turns the receivers: section into the worker's receivers.
// Email receivers open one mail sender per runner (each keeps its SMTP
// connection) following the mail section through reloads; HTTP receivers
// are safe for concurrent use and shared.
func receiverSpecs(env *daemon.Env[workerconf.Config], settings *mail.Settings) ([]notify.ReceiverSpec, error) {
	var specs []notify.ReceiverSpec
	for _, r := range env.Config.Receivers {
		s := notify.ReceiverSpec{Name: r.Name, Kind: notify.KindOther, RateLimit: r.Limit(), GiveUpAfter: r.GiveUpAfter, Quiet: r.QuietHours}
		if r.Type == workerconf.ReceiverTypeEmail {
			s.Kind = notify.KindEmail
			if r.Email != nil {
				s.To = r.Email.To
			}
			s.Open = func() (notify.Receiver, error) { return mail.NewFollowing(settings, env.Logger) }
		} else {
			shared, err := webhook.NewReceiver(r.Blocks, r.Type, r.Name)
			if err != nil {
				return nil, fmt.Errorf("receiver %s: %w", r.Name, err)
			}
			s.Open = func() (notify.Receiver, error) { return shared, nil }
		}
		specs = append(specs, s)
	}
	return specs, nil
}
