package report_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pagewatch/pagewatch/broker/ratelimit"
	"github.com/pagewatch/pagewatch/internal/testenv"
	"github.com/pagewatch/pagewatch/pipeline/notify"
	"github.com/pagewatch/pagewatch/pipeline/report"
)

// A report spends the receiver's allowance as a crossing does: with the
// receiver's one send an hour taken (by another worker process's
// crossing, through its own limiter on the shared bucket), the report
// waits its turn and sends nothing meanwhile.
func TestReportsWaitOnTheSharedRateLimits(t *testing.T) {
	logger := testenv.Logger(t)
	b, _ := testenv.NATS(t, logger)
	hourly := ratelimit.Limit{Rate: 1, Per: time.Hour, Burst: 1}
	c := &chat{}
	spec := notify.ReceiverSpec{Name: "slack", Kind: notify.KindOther, RateLimit: hourly, Open: func() (notify.Receiver, error) { return c, nil }}

	crossings := notify.NewLimiter(b, logger, prometheus.NewRegistry()) // another process's
	ctx := context.Background()
	if err := notify.Turn(ctx, crossings, spec, ratelimit.Config{}, nil); err != nil {
		t.Fatal(err)
	}

	d := report.NewReceivers([]notify.ReceiverSpec{spec}, nil)
	lim := notify.NewLimiter(b, logger, prometheus.NewRegistry())
	d.Turn = func(ctx context.Context, spec notify.ReceiverSpec, to []string) error {
		return notify.Turn(ctx, lim, spec, ratelimit.Config{}, to)
	}
	r := report.Report{Key: "report.daily.1", Name: "daily", Site: "example.com", Period: "day", Zone: "UTC"}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err := d.DeliverReport(wctx, "slack", nil, r)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a report to a receiver whose allowance is spent: got %v, want it waiting (deadline exceeded)", err)
	}
	if len(c.got) != 0 {
		t.Fatalf("the report was sent %d times while the receiver was over its limit", len(c.got))
	}

	// Another receiver's allowance is its own.
	other := spec
	other.Name = "teams"
	d = report.NewReceivers([]notify.ReceiverSpec{other}, nil)
	d.Turn = func(ctx context.Context, spec notify.ReceiverSpec, to []string) error {
		return notify.Turn(ctx, lim, spec, ratelimit.Config{}, to)
	}
	if err := d.DeliverReport(ctx, "teams", nil, r); err != nil {
		t.Fatal(err)
	}
	if len(c.got) != 1 {
		t.Fatalf("teams: %d sends, want 1", len(c.got))
	}
}
