package clickhouse

import (
	"context"
	"fmt"
	"regexp"
	"time"
)

// partitionIDRE is the id of a hits partition, toYYYYMMDD(ts). Ids are
// checked before use although they are sent as bound literals: anything
// else in the list means the table is not the one this code knows.
var partitionIDRE = regexp.MustCompile(`^[0-9]{8}$`)

// DropHitsBefore drops every day of raw hits older than cutoff's day (days
// as the server's time zone sees them, like the partition key), in cluster
// mode on every shard. It returns the partition ids it dropped, oldest
// first; on an error, those dropped before it. page_minutes is never
// touched: all-time rules read it.
//
// ClickHouse 18.16 has no TTL, so whole days are dropped instead. Several
// loaders may do this at once: a partition another one dropped first is
// dropped again as a no-op.
func (h Hits) DropHitsBefore(ctx context.Context, cutoff time.Time) (dropped []string, err error) {
	ids, err := h.hitsPartitionsBefore(ctx, cutoff)
	if err != nil {
		return nil, err
	}
	stmt := alterDropHitsPartition
	if h.c.cfg.Cluster != "" {
		stmt = fmt.Sprintf(alterDropHitsPartitionOnCluster, h.c.cfg.Database, h.c.cfg.Cluster)
	}
	for _, id := range ids {
		if !partitionIDRE.MatchString(id) {
			return dropped, fmt.Errorf("drop hits partitions: unexpected partition id %q (want YYYYMMDD)", id)
		}
		if err := h.c.conn.Exec(ctx, stmt, id); err != nil {
			return dropped, fmt.Errorf("drop hits partition %s: %w", id, err)
		}
		dropped = append(dropped, id)
	}
	return dropped, nil
}

// hitsPartitionsBefore lists the active partitions of the hits table (of
// hits_local on every shard in cluster mode) older than cutoff's day.
func (h Hits) hitsPartitionsBefore(ctx context.Context, cutoff time.Time) ([]string, error) {
	query, args := queryHitsPartitionsBefore, []any{cutoff.Unix()}
	if h.c.cfg.Cluster != "" {
		query, args = queryHitsPartitionsBeforeOnCluster, []any{h.c.cfg.Cluster, h.c.cfg.Database, cutoff.Unix()}
	}
	rows, err := h.c.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list hits partitions before %s: %w", cutoff.UTC().Format(time.DateOnly), err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("list hits partitions: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list hits partitions: %w", err)
	}
	return ids, nil
}
