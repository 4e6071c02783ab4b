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
		return d.mail(ctx, r, to)
	}
	rcv, err := spec.Open()
	if err != nil {
		return err
	}
	return rcv.Send(ctx, notification(r))
}

// notification is a report as text for chats and webhooks.
func notification(r Report) notify.Notification {
	return notify.Notification{Key: r.Key, Rule: "report-" + r.Name, Site: r.Site, Path: "(report " + r.Name + ")", Count: r.Total,
		Window: r.Period, CrossedAt: r.Cur.To, Subject: r.Subject(), Body: strings.Join(r.Lines(), "\n")}
}
