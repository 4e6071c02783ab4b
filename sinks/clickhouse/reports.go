package clickhouse

import (
	"context"
	"time"
)

// SealedBefore returns the UTC midnight before which page_days holds
// every day's complete totals, as far as before's day: the first earlier
// day loaded since it was last sealed (or never sealed), else before's
// day. A reader that is not the sweeper (scheduled reports) passes it as
// WindowQuery.SealedBefore, so old days are read from page_days and stay
// exact.
func (cs Counts) SealedBefore(ctx context.Context, before time.Time) (time.Time, error) {
	days, err := cs.daysToSeal(ctx, before)
	if err != nil {
		return time.Time{}, err
	}
	if len(days) > 0 {
		return days[0].day.UTC(), nil
	}
	return time.Unix(floorDay(max(before.Unix(), 0)), 0).UTC(), nil
}
