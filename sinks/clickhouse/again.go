package clickhouse

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/pagewatch/pagewatch/domain/hit"
)

// queryLoadedOffsets lists which lines of a file, under its line key, are
// in hits already, among the offsets below a bound. The message's pages
// and times narrow the read to the parts of the table's key (site, path,
// ts) its lines can be in.
const queryLoadedOffsets = `SELECT DISTINCT line_offset FROM hits
WHERE site IN ? AND path IN ? AND ts >= toDateTime(?) AND ts <= toDateTime(?)
  AND seq = ? AND line_offset < ?`

// DropLoaded takes out of b the hits already in the hits table (of those
// below b.Again, hit.HeaderAgain): lines of a file published again in
// another message after NATS forgot the message they were loaded from.
// That message's per-minute counts are still in page_minutes under its
// own key, so b's counts must leave them out; the hits themselves would
// change nothing. A batch without a line key of its own (keys from its
// sequence) is left as it is: nothing ties its lines to earlier ones.
func (h Hits) DropLoaded(ctx context.Context, b *hit.Batch) error {
	if b.Again == 0 || b.LineKey == 0 {
		return nil
	}
	sites, paths := map[string]bool{}, map[string]bool{}
	from, to := int64(math.MaxInt64), int64(math.MinInt64)
	note := func(site, path string, unix int64, off uint64) {
		if off >= b.Again {
			return
		}
		sites[site], paths[path] = true, true
		from, to = min(from, unix), max(to, unix)
	}
	if l := b.Lean; l != nil {
		for _, x := range l.Hits {
			note(l.Str(x.Site), l.Str(x.Path), x.Unix, x.Offset)
		}
	} else {
		for _, x := range b.Hits {
			note(x.Site, x.Path, x.Time.Unix(), x.Offset)
		}
	}
	if len(sites) == 0 {
		return nil
	}
	rows, err := h.c.conn.Query(ctx, queryLoadedOffsets, keySet(setKeys(sites)), keySet(setKeys(paths)), from, to, b.LineKey, b.Again)
	if err != nil {
		return fmt.Errorf("lines loaded already: %w", err)
	}
	defer rows.Close()
	loaded := map[uint64]bool{}
	for rows.Next() {
		var off uint64
		if err := rows.Scan(&off); err != nil {
			return fmt.Errorf("lines loaded already: %w", err)
		}
		loaded[off] = true
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("lines loaded already: %w", err)
	}
	if len(loaded) == 0 {
		return nil
	}
	if l := b.Lean; l != nil {
		l.Hits = slices.DeleteFunc(l.Hits, func(x hit.LeanHit) bool { return loaded[x.Offset] })
	} else {
		b.Hits = slices.DeleteFunc(b.Hits, func(x hit.Hit) bool { return loaded[x.Offset] })
	}
	return nil
}

func setKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
