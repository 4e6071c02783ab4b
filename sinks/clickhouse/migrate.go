package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/pagewatch/pagewatch/schema"
)

// Migrate applies the embedded migrations that the database lacks. Safe to
// run from several daemons at once: every statement is idempotent, and the
// migrations table is a ReplacingMergeTree, so a version recorded twice is
// still one version.
func (c *Client) Migrate(ctx context.Context) (applied int, err error) {
	migrations, err := schema.Migrations()
	if err != nil {
		return 0, err
	}
	if err := c.conn.Exec(ctx, schema.CreateMigrationsTable); err != nil {
		return 0, fmt.Errorf("create %s: %w", schema.MigrationsTable, err)
	}
	done, err := c.appliedVersions(ctx)
	if err != nil {
		return 0, err
	}
	for _, m := range migrations {
		if done[m.Version] {
			continue
		}
		for i, stmt := range m.Statements {
			if err := c.conn.Exec(ctx, stmt); err != nil {
				return applied, fmt.Errorf("migration %s statement %d: %w", m.Name, i+1, err)
			}
		}
		if err := c.sendColumns(ctx, insertMigration, []uint32{m.Version}, []string{m.Name}, []time.Time{time.Now().UTC()}); err != nil {
			return applied, fmt.Errorf("record migration %s: %w", m.Name, err)
		}
		c.logger.Info("applied migration", "name", m.Name, "statements", len(m.Statements))
		applied++
	}
	return applied, nil
}

func (c *Client) appliedVersions(ctx context.Context) (map[uint32]bool, error) {
	rows, err := c.conn.Query(ctx, queryAppliedMigrations)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", schema.MigrationsTable, err)
	}
	defer rows.Close()
	done := map[uint32]bool{}
	for rows.Next() {
		var v uint32
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("read %s: %w", schema.MigrationsTable, err)
		}
		done[v] = true
	}
	return done, rows.Err()
}
