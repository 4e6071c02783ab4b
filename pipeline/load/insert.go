package load

import (
	"context"
	"time"

	"github.com/pagewatch/pagewatch/broker/retry"
)

// insert retries until the store takes the batch or ctx ends. Meanwhile
// the batch's keep-alive holds its messages, and the collect stage, unable
// to hand over another batch, fetches nothing more.
func (l *Loader) insert(ctx context.Context, b *batch) error {
	for attempt := 0; ; attempt++ {
		start := time.Now()
		err := l.store.InsertHits(ctx, b.hits)
		if err == nil {
			l.metrics.insertSeconds.Observe(time.Since(start).Seconds())
			l.metrics.rows.Add(float64(b.rows))
			l.metrics.batches.Inc()
			l.metrics.batchRows.Observe(float64(b.rows))
			l.metrics.insertBackoff.Set(0)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		l.metrics.insertErrors.Inc()
		d := retry.Delay(attempt, 100*time.Millisecond, l.cfg.RetryMax)
		l.metrics.insertBackoff.Set(d.Seconds())
		l.logger.Warn("insert failed; retrying", "err", err, "rows", b.rows, "messages", len(b.msgs), "attempt", attempt+1, "retry_in", d.Round(time.Millisecond))
		if err := retry.Sleep(ctx, d); err != nil {
			return err
		}
	}
}
