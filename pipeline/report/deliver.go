package report

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/pipeline/notify"
)

// ClaimsTTL is the TTL the claims bucket (bus.BucketReports) should have:
// it keeps a report's claims past any period they could matter for.
const ClaimsTTL = 62 * 24 * time.Hour

// MailFunc mails a report, with its chart, to addresses (sinks/mail's
// Sender.SendReport on the current mail settings).
type MailFunc func(ctx context.Context, r Report, to []string) error

// Receivers is the Deliverer the worker runs reports with: it sends them
// through the worker's receivers, email receivers as a report mail (by
// Mail), the others as a notification with the report's text.
type Receivers struct {
	specs map[string]notify.ReceiverSpec
	mail  MailFunc
	// Turn, when set, waits for the receiver's turn under the shared rate
	// limits before each send (notify.Turn with the worker's limiter), so
	// a report spends the allowance crossings spend.
	Turn func(ctx context.Context, spec notify.ReceiverSpec, to []string) error
}

// NewReceivers delivers to specs by name, mailing through mail.
func NewReceivers(specs []notify.ReceiverSpec, mail MailFunc) *Receivers {
	d := &Receivers{specs: map[string]notify.ReceiverSpec{}, mail: mail}
	for _, s := range specs {
		d.specs[s.Name] = s
	}
	return d
}

// DeliverReport sends r to the receiver named receiver: for an email
// receiver to the addresses to, or if none the receiver's own.
func (d *Receivers) DeliverReport(ctx context.Context, receiver string, to []string, r Report) error {
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
		if err := d.turn(ctx, spec, to); err != nil {
			return err
		}
		return d.mail(ctx, r, to)
	}
	if err := d.turn(ctx, spec, nil); err != nil {
		return err
	}
	rcv, err := spec.Open()
	if err != nil {
		return err
	}
	return rcv.Send(ctx, notification(r))
}

func (d *Receivers) turn(ctx context.Context, spec notify.ReceiverSpec, to []string) error {
	if d.Turn == nil {
		return nil
	}
	if err := d.Turn(ctx, spec, to); err != nil {
		return fmt.Errorf("rate limit of receiver %s: %w", spec.Name, err)
	}
	return nil
}

// notification is a report as text for chats and webhooks.
func notification(r Report) notify.Notification {
	return notify.Notification{Key: r.Key, Rule: "report-" + r.Name, Site: r.Site, Path: "(report " + r.Name + ")", Count: r.Total,
		Window: r.Period, CrossedAt: r.Cur.To, Subject: r.Subject(), Body: strings.Join(r.Lines(), "\n")}
}
