package clickhouse

import (
	"context"
	"fmt"
	"regexp"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/pagewatch/pagewatch/schema"
)

// ddlTimeout bounds how long a statement ON CLUSTER waits for every host.
// It stays below the connection's read timeout, so that a host that is
// down fails the migration with the server's message naming the
// unfinished hosts rather than with a bare i/o timeout.
const ddlTimeout = 100 // seconds; settings must be Go ints for 18.16

// Migrate applies the embedded migrations that the database lacks. Safe to
// run from several daemons at once: every statement is idempotent, and the
// migrations table is a ReplacingMergeTree, so a version recorded twice is
// still one version. In cluster mode every statement runs ON CLUSTER.
func (c *Client) Migrate(ctx context.Context) (applied int, err error) {
	layout := c.cfg.layout()
	migrations, err := schema.Migrations(layout)
	if err != nil {
		return 0, err
	}
	bootstrap, err := schema.CreateMigrationsTable(layout)
	if err != nil {
		return 0, err
	}
	if layout.Clustered() {
		ctx = ch.Context(ctx, ch.WithSettings(ch.Settings{"distributed_ddl_task_timeout": ddlTimeout}))
	}
	// schema_migrations says what ran ON CLUSTER, not where: a server
	// added to the cluster since has none of the tables, nor the
	// database. The statements are idempotent, so they all run again.
	missing := false
	if layout.Clustered() {
		if missing, err = c.tablesMissing(ctx, tablesCreated(bootstrap, migrations)); err != nil {
			return 0, err
		}
		if missing {
			c.logger.Info("a host of the cluster lacks tables; applying every migration again ON CLUSTER", "cluster", c.cfg.Cluster)
			if err := createDatabase(ctx, c.cfg); err != nil {
				return 0, err
			}
		}
	}
	if err := c.conn.Exec(ctx, bootstrap); err != nil {
		return 0, fmt.Errorf("create %s: %w", schema.MigrationsTable, err)
	}
	done, err := c.appliedVersions(ctx)
	if err != nil {
		return 0, err
	}
	if missing {
		done = map[uint32]bool{}
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

// createdRE finds the table a CREATE TABLE statement of ours creates.
var createdRE = regexp.MustCompile(`CREATE TABLE IF NOT EXISTS (?:\w+\.)?(\w+)`)

// tablesCreated is the set of tables the schema creates, so that tables
// of others in the database do not count as missing anywhere.
func tablesCreated(bootstrap string, migrations []schema.Migration) map[string]bool {
	out := map[string]bool{}
	add := func(stmt string) {
		if m := createdRE.FindStringSubmatch(stmt); m != nil {
			out[m[1]] = true
		}
	}
	add(bootstrap)
	for _, m := range migrations {
		for _, s := range m.Statements {
			add(s)
		}
	}
	return out
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
