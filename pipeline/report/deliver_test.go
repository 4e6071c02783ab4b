package report_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/pipeline/report"
)

// chat is a receiver that keeps what it is sent.
type chat struct{ got []notify.Notification }

func (c *chat) Send(_ context.Context, n notify.Notification) error {
	c.got = append(c.got, n)
	return nil
}

func TestReceiversDeliverByKind(t *testing.T) {
	c := &chat{}
	var mailed [][]string
	d := report.NewReceivers([]notify.ReceiverSpec{
		{Name: "email", Kind: notify.KindEmail, To: []string{"team@example.com"}},
		{Name: "bare", Kind: notify.KindEmail},
		{Name: "slack", Kind: notify.KindOther, Open: func() (notify.Receiver, error) { return c, nil }},
	}, func(_ context.Context, _ report.Report, to []string) error {
		mailed = append(mailed, to)
		return nil
	})
	r := report.Report{Key: "report.daily.1", Name: "daily", Site: "example.com", Period: "day", Zone: "UTC",
		Cur: report.Span{From: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)}, Total: 12}
	ctx := context.Background()

	if err := d.DeliverReport(ctx, "email", nil, r); err != nil {
		t.Fatal(err)
	}
	if err := d.DeliverReport(ctx, "email", []string{"ops@example.com"}, r); err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"team@example.com"}, {"ops@example.com"}}; !reflect.DeepEqual(mailed, want) {
		t.Errorf("mailed to %v, want %v (the receiver's addresses, then the report's own)", mailed, want)
	}
	if err := d.DeliverReport(ctx, "bare", nil, r); err == nil || !strings.Contains(err.Error(), "no addresses") {
		t.Errorf("email receiver without addresses: %v", err)
	}
	if err := d.DeliverReport(ctx, "pager", nil, r); err == nil || !strings.Contains(err.Error(), `no receiver named "pager"`) {
		t.Errorf("unknown receiver: %v", err)
	}

	if err := d.DeliverReport(ctx, "slack", []string{"ops@example.com"}, r); err != nil {
		t.Fatal(err)
	}
	if len(c.got) != 1 {
		t.Fatalf("chat got %d notifications", len(c.got))
	}
	n := c.got[0]
	if n.Key != r.Key || n.Rule != "report-daily" || n.Path != "(report daily)" || n.Count != 12 || n.Window != "day" ||
		!n.CrossedAt.Equal(r.Cur.To) || n.Subject != r.Subject() || n.Body != strings.Join(r.Lines(), "\n") {
		t.Errorf("chat notification: %+v", n)
	}
	if len(mailed) != 2 {
		t.Errorf("a chat delivery mailed: %v", mailed)
	}
}
