package clickhouse

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// dayBatch is one loaded_days row: a message had hits on a UTC day.
type dayBatch struct {
	month int   // YYYYMM, the loaded_days partition
	day   int64 // Unix time of the day's UTC midnight
	seq   uint64
}

// loadedDays lists the distinct (day, message) pairs of some page-minute
// counts, in the table's order.
func loadedDays(minutes []minuteCount) []dayBatch {
	seen := map[dayBatch]bool{}
	var out []dayBatch
	for _, m := range minutes {
		d := dayBatch{day: floorDay(m.minute), seq: m.seq}
		if !seen[d] {
			seen[d] = true
			y, mo, _ := time.Unix(d.day, 0).UTC().Date()
			d.month = y*100 + int(mo)
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b dayBatch) int {
		if c := cmp.Compare(a.day, b.day); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	return out
}

func (h Hits) insertLoadedDays(ctx context.Context, rows []dayBatch) error {
	if h.c.http != nil {
		return h.c.insertNative(ctx, insertLoadedDays, func(b []byte) []byte { return appendDays(b, rows) })
	}
	return h.c.sendColumns(ctx, insertLoadedDays, dayColumns(rows)...)
}

// dayColumns are rows as the driver takes them, in insertLoadedDays'
// order.
func dayColumns(rows []dayBatch) []any {
	day, seq := make([]time.Time, len(rows)), make([]uint64, len(rows))
	for i, r := range rows {
		day[i], seq[i] = time.Unix(r.day, 0).UTC(), r.seq
	}
	return []any{day, seq}
}

// SealDays brings page_days up to date for the UTC days before before's
// day: each day whose number of loaded messages (loaded_days) exceeds
// the number it was last sealed with (sealed_days) has its per-page totals
// summed again from page_minutes. It returns how many days it sealed.
//
// Why the totals are exact: the loader writes a message's loaded_days rows
// only after its page_minutes rows were inserted. The number n of a day's
// messages is read first and the day summed after, so the sum holds at
// least the n messages counted (perhaps more, whose loaded_days rows are
// not in yet). The day is then recorded as sealed with n. A message that
// lands later, a late batch or a backfill of old logs, raises the day's
// count above n, and the next SealDays seals the day again.
//
// Idempotent, and safe with several sweepers at once: sealing a day again
// writes rows equal to or more complete than the last (page_days' version
// only grows with what a sum covers, and reads take the highest), and
// sealed_days keeps the largest n. A sealer that dies between the two
// writes leaves the day unsealed, to be sealed again.
//
// In cluster mode the argument needs every read to see the shards'
// completed inserts, which a replica that has not fetched them yet
// breaks: a Distributed read takes any replica of each shard. So before
// summing, every replica of page_minutes must hold every part committed
// before the days to seal were listed, and before a day is recorded
// sealed (after which the sweep reads its totals), every replica of
// page_days must hold its sums (see awaitReplicas). A replica that is
// down fails the seal, which only costs speed: reads fall back to
// page_minutes until the next sweep seals.
func (cs Counts) SealDays(ctx context.Context, before time.Time) (int, error) {
	return cs.sealEach(ctx, before, daySeal)
}

// SealHours brings page_hours up to date for the UTC days before
// before's day, as SealDays does page_days, by the same argument: a
// day's hours are summed from page_minutes after its number of loaded
// messages was read, and sealed again when that number grows. Tracked in
// sealed_hour_days, apart from page_days, so that the days sealed before
// page_hours existed are summed per hour too. It returns how many days'
// hours it sealed.
func (cs Counts) SealHours(ctx context.Context, before time.Time) (int, error) {
	return cs.sealEach(ctx, before, hourSeal)
}

// sealing is one rollup of page_minutes sealed a UTC day at a time: the
// days to seal, the INSERT ... SELECT summing a day, the seal's record.
type sealing struct {
	what                string // "day", "hours of day"
	toSeal, sum, sealed string
	local               string // the rollup's shard-local table in cluster mode
}

var (
	daySeal  = sealing{what: "day", toSeal: queryDaysToSeal, sum: insertPageDays, sealed: insertSealedDays, local: "page_days_local"}
	hourSeal = sealing{what: "hours of day", toSeal: queryHourDaysToSeal, sum: insertPageHours, sealed: insertSealedHourDays, local: "page_hours_local"}
)

func (cs Counts) sealEach(ctx context.Context, before time.Time, s sealing) (int, error) {
	if before.Unix() <= 0 {
		return 0, nil // no day before 1970 holds hits
	}
	days, err := cs.daysToSealBy(ctx, s.toSeal, before)
	if err != nil {
		return 0, err
	}
	if len(days) > 0 && cs.c.cfg.Cluster != "" {
		if err := cs.c.awaitReplicas(ctx, "page_minutes_local"); err != nil {
			return 0, fmt.Errorf("seal %s: %w", s.what, err)
		}
	}
	for i, d := range days {
		from := d.day.Unix()
		// One INSERT ... SELECT per day bounds its memory by the pages
		// of one day, whatever the backlog.
		if err := cs.c.conn.Exec(cs.c.insertContext(ctx), s.sum, from, from+secondsPerDay); err != nil {
			return i, fmt.Errorf("seal %s %s: sum page_minutes: %w", s.what, d.day.Format(time.DateOnly), err)
		}
		if cs.c.cfg.Cluster != "" {
			if err := cs.c.awaitReplicas(ctx, s.local); err != nil {
				return i, fmt.Errorf("seal %s %s: %w", s.what, d.day.Format(time.DateOnly), err)
			}
		}
		if err := cs.c.sendColumns(ctx, s.sealed, []time.Time{d.day}, []uint64{d.loaded}); err != nil {
			return i, fmt.Errorf("seal %s %s: record it sealed with %d messages: %w", s.what, d.day.Format(time.DateOnly), d.loaded, err)
		}
	}
	return len(days), nil
}

// dayToSeal is a UTC day and its number of loaded messages.
type dayToSeal struct {
	day    time.Time
	loaded uint64
}

// daysToSeal lists the days page_days is to seal (again).
func (cs Counts) daysToSeal(ctx context.Context, before time.Time) ([]dayToSeal, error) {
	return cs.daysToSealBy(ctx, queryDaysToSeal, before)
}

// daysToSealBy lists the days a rollup's toSeal query returns.
func (cs Counts) daysToSealBy(ctx context.Context, query string, before time.Time) ([]dayToSeal, error) {
	rows, err := cs.c.conn.Query(ctx, query, before.Unix(), before.Unix())
	if err != nil {
		return nil, fmt.Errorf("days to seal before %s: %w", before.UTC().Format(time.DateOnly), err)
	}
	defer rows.Close()
	var out []dayToSeal
	for rows.Next() {
		var (
			d      dayToSeal
			sealed uint64
		)
		if err := rows.Scan(&d.day, &d.loaded, &sealed); err != nil {
			return nil, fmt.Errorf("days to seal: %w", err)
		}
		// The calendar day as returned, whatever zone the driver gives it.
		y, m, dd := d.day.Date()
		d.day = time.Date(y, m, dd, 0, 0, 0, 0, time.UTC)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("days to seal: %w", err)
	}
	return out, nil
}
