package clickhouse

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/pagewatch/pagewatch/domain/crossing"
)

// RecordCrossing writes a crossing to the history. Recording one twice
// leaves one row once merged (ReplacingMergeTree on the key).
func (hs History) RecordCrossing(ctx context.Context, x crossing.Crossing) error {
	return hs.RecordCrossings(ctx, []crossing.Crossing{x})
}

// RecordCrossings writes crossings to the history, one insert per month
// they fall in (the table's partition): a storm of ten thousand crossings
// is one insert, not ten thousand.
func (hs History) RecordCrossings(ctx context.Context, xs []crossing.Crossing) error {
	byMonth := map[int][]crossing.Crossing{}
	for _, x := range xs {
		m := dayOf(x.CrossedAt.Unix()) / 100
		byMonth[m] = append(byMonth[m], x)
	}
	for _, part := range byMonth {
		n := len(part)
		key, rule, site, path, window := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		threshold, count := make([]uint64, n), make([]uint64, n)
		at := make([]time.Time, n)
		for i, x := range part {
			key[i], rule[i], site[i], path[i], window[i] = x.Key, x.Rule, x.Site, x.Path, x.Window
			threshold[i], count[i], at[i] = x.Threshold, x.Count, x.CrossedAt.UTC()
		}
		if err := hs.c.sendColumns(ctx, insertCrossing, key, rule, site, path, window, threshold, count, at); err != nil {
			return fmt.Errorf("record %d crossings: %w", n, err)
		}
		if err := hs.recordWhys(ctx, part); err != nil {
			return err
		}
	}
	return nil
}

// recordWhys writes the whys of crossings of one month, as JSON, to
// crossing_whys. After the crossings: a why without its crossing would be
// an orphan, a crossing without its why (a failure in between) is still
// the history, and the sweep's retry writes both again.
func (hs History) recordWhys(ctx context.Context, part []crossing.Crossing) error {
	var (
		key, why []string
		at       []time.Time
	)
	for _, x := range part {
		if x.Why == nil {
			continue
		}
		b, err := json.Marshal(x.Why)
		if err != nil {
			return fmt.Errorf("encode why of crossing %s: %w", x.Key, err)
		}
		key, why, at = append(key, x.Key), append(why, string(b)), append(at, x.CrossedAt.UTC())
	}
	if len(key) == 0 {
		return nil
	}
	if err := hs.c.sendColumns(ctx, insertCrossingWhy, key, at, why); err != nil {
		return fmt.Errorf("record the whys of %d crossings: %w", len(key), err)
	}
	return nil
}

// RecordNotification appends one worker outcome to the history.
func (hs History) RecordNotification(ctx context.Context, r crossing.Record) error {
	return hs.RecordNotifications(ctx, []crossing.Record{r})
}

// RecordNotifications appends worker outcomes to the history in one
// insert. They must fall in one month (the table's partition) or the
// insert is split by month.
func (hs History) RecordNotifications(ctx context.Context, rs []crossing.Record) error {
	byMonth := map[int][]crossing.Record{}
	for _, r := range rs {
		m := dayOf(r.At.Unix()) / 100
		byMonth[m] = append(byMonth[m], r)
	}
	for _, part := range byMonth {
		n := len(part)
		at := make([]time.Time, n)
		key, rule, site, path, outcome, errText, worker := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		code := make([]uint16, n)
		for i, r := range part {
			if r.SMTPCode > 0 && r.SMTPCode < 1000 {
				code[i] = uint16(r.SMTPCode)
			}
			x := r.Crossing
			at[i], key[i], rule[i], site[i], path[i] = r.At.UTC(), x.Key, x.Rule, x.Site, x.Path
			outcome[i], errText[i], worker[i] = string(r.Outcome), r.Error, r.Worker
		}
		if err := hs.c.sendColumns(ctx, insertNotification, at, key, rule, site, path, outcome, code, errText, worker); err != nil {
			return fmt.Errorf("record %d notification outcomes: %w", n, err)
		}
	}
	return nil
}
