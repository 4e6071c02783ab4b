package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/pagewatch/pagewatch/pipeline/crossing"
)

// RecordCrossing writes a crossing to the history. Recording one twice
// leaves one row once merged (ReplacingMergeTree on the key).
func (c *Client) RecordCrossing(ctx context.Context, x crossing.Crossing) error {
	err := c.sendColumns(ctx, insertCrossing,
		[]string{x.Key}, []string{x.Rule}, []string{x.Site}, []string{x.Path},
		[]string{x.Window}, []uint64{x.Threshold}, []uint64{x.Count}, []time.Time{x.CrossedAt.UTC()})
	if err != nil {
		return fmt.Errorf("record crossing %s: %w", x.Key, err)
	}
	return nil
}

// RecordNotification appends one worker outcome to the history.
func (c *Client) RecordNotification(ctx context.Context, r crossing.Record) error {
	code := uint16(0)
	if r.SMTPCode > 0 && r.SMTPCode < 1000 {
		code = uint16(r.SMTPCode)
	}
	x := r.Crossing
	err := c.sendColumns(ctx, insertNotification,
		[]time.Time{r.At.UTC()}, []string{x.Key}, []string{x.Rule}, []string{x.Site}, []string{x.Path},
		[]string{string(r.Outcome)}, []uint16{code}, []string{r.Error}, []string{r.Worker})
	if err != nil {
		return fmt.Errorf("record notification %s %s: %w", x.Key, r.Outcome, err)
	}
	return nil
}
