package clickhouse

import (
	"context"
	"fmt"
	"strings"

	"github.com/pagewatch/pagewatch/domain/traffic"
)

// PageNoises returns each page's own noise over q's weeks of sealed
// hours (traffic.NoiseQuery), one row per page read: the hours stay in
// ClickHouse (some 100 of a page's 672 are read).
func (cs Counts) PageNoises(ctx context.Context, q traffic.NoiseQuery) ([]traffic.PageNoise, error) {
	if len(q.Sites) == 0 || q.Weeks < 1 {
		return nil, nil
	}
	sql, args := noiseSQL(q)
	rows, err := cs.c.conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("page noise over %d weeks from %s: %w", q.Weeks, q.From.UTC().Format("2006-01-02 15:04"), err)
	}
	defer rows.Close()
	var out []traffic.PageNoise
	for rows.Next() {
		var n traffic.PageNoise
		if err := rows.Scan(&n.Site, &n.Path, &n.Noise); err != nil {
			return nil, fmt.Errorf("page noise: %w", err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("page noise: %w", err)
	}
	return out, nil
}

// noiseSQL renders queryPageNoise for q: the median of its Weeks samples
// is written out for that many (rules.PageNoise's median: the middle
// one, or the mean of the middle two).
func noiseSQL(q traffic.NoiseQuery) (string, []any) {
	from := q.From.Unix()
	sql := strings.NewReplacer(
		"{median xs}", medianOf("xs", q.Weeks),
		"{median ds}", medianOf("ds", q.Weeks),
	).Replace(queryPageNoise)
	// The median of Weeks samples is at least MinMedian only if the
	// upper middle one and those above it are: (Weeks+1)/2 of them.
	return sql, []any{q.TrimPercent, q.Weeks, q.Bias, siteSet(q.Sites), from, from + int64(q.Weeks)*7*secondsPerDay,
		from, max(q.Every, 1), from, q.MinMedian, (q.Weeks + 1) / 2, q.MinMedian, q.MinHours}
}

// medianOf is the SQL of the median of the sorted array a of n elements.
func medianOf(a string, n int) string {
	if n%2 == 1 {
		return fmt.Sprintf("%s[%d]", a, n/2+1)
	}
	return fmt.Sprintf("(%[1]s[%[2]d] + %[1]s[%[3]d]) / 2", a, n/2, n/2+1)
}
