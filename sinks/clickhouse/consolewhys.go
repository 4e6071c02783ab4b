package clickhouse

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/pagewatch/pagewatch/domain/crossing"
)

// Whys returns why the given crossings were made, by key; crossings
// recorded without a why (or before whys were kept) are absent.
func (hs History) Whys(ctx context.Context, keys []string) (map[string]crossing.Why, error) {
	out := map[string]crossing.Why{}
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := hs.c.conn.Query(ctx, queryConsoleWhys, keySet(keys))
	if err != nil {
		return nil, fmt.Errorf("whys of %d crossings: %w", len(keys), err)
	}
	defer rows.Close()
	for rows.Next() {
		var key, raw string
		if err := rows.Scan(&key, &raw); err != nil {
			return nil, fmt.Errorf("whys of crossings: %w", err)
		}
		var w crossing.Why
		if err := json.Unmarshal([]byte(raw), &w); err != nil {
			continue // a why this version cannot read: the crossing is labelled without it
		}
		out[key] = w
	}
	return out, rows.Err()
}
