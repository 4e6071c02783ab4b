package load

import (
	"context"
	"fmt"
	"time"

	"github.com/pagewatch/pagewatch/broker/retry"
	"github.com/pagewatch/pagewatch/domain/hit"
)

// insert retries until the store takes the batch or ctx ends. Meanwhile
// the batch's keep-alive holds its messages, and the collect stage, unable
// to hand over another batch, fetches nothing more.
func (l *Loader) insert(ctx context.Context, b *batch) error {
	for attempt := 0; ; attempt++ {
		start := time.Now()
		err := l.dropLoaded(ctx, b)
		if err == nil {
			err = l.store.InsertHits(ctx, b.hits)
		}
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

// loadedDropper is a Store that can tell which lines of a message are
// loaded already: the ClickHouse store.
type loadedDropper interface {
	DropLoaded(ctx context.Context, b *hit.Batch) error
}

// dropLoaded takes out of b's messages published again (hit.HeaderAgain:
// NATS forgot the messages their lines were first published in, after
// those were loaded) the lines already loaded. Inserted again they would
// change no hit, but their per-minute counts, under the new message's
// key, would add to those the forgotten messages left. It runs before
// each attempt: after an attempt that inserted some days' hits, those
// days' counts are in already, and the next leaves them be.
func (l *Loader) dropLoaded(ctx context.Context, b *batch) error {
	d, ok := l.store.(loadedDropper)
	if !ok {
		return nil
	}
	for i := range b.hits {
		hb := &b.hits[i]
		if hb.Again == 0 {
			continue
		}
		before := hb.Len()
		if err := d.DropLoaded(ctx, hb); err != nil {
			return fmt.Errorf("lines published again: %w", err)
		}
		if n := before - hb.Len(); n > 0 {
			b.rows -= n
			l.logger.Info("lines published again after NATS forgot them, loaded before: not counted again", "seq", hb.Seq, "lines", before, "loaded_before", n)
		}
	}
	return nil
}
