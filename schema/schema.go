// Package schema holds pagewatch's ClickHouse tables as versioned SQL
// migrations, embedded in the binaries. Applying them is the ClickHouse
// sink's job; this package only knows what they are.
//
// Every statement must be idempotent (IF NOT EXISTS and the like): ClickHouse
// has no transactional DDL, so a migration interrupted half-way is simply
// run again.
//
// Each migration file is a text/template rendered for a Layout: one server
// (the plain DDL) or a cluster (Replicated tables, Distributed tables, ON
// CLUSTER). A table is declared as
//
//	CREATE TABLE IF NOT EXISTS {{table "hits"}} (
//	    ...
//	) ENGINE = {{engine "hits" "ReplacingMergeTree()"}}
//	PARTITION BY ...
//	ORDER BY ...;
//	{{distributed "hits" "cityHash64(site, path)"}}
//
// and the sharding key must keep together the rows that a query or a
// ReplacingMergeTree needs to see side by side: merges and FINAL only
// deduplicate within one shard. A later migration that alters a table must
// alter both halves in cluster mode; add template functions for that when
// the first one is written.
package schema

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var files embed.FS

// Migration is one numbered SQL file, split into statements.
type Migration struct {
	Version    uint32
	Name       string // file name, e.g. "0001_init.sql"
	Statements []string
}

// MigrationsTable records the applied versions.
const MigrationsTable = "schema_migrations"

// createMigrationsTable is the bootstrap statement, run before any
// migration. In cluster mode it is one replicated table that every host
// holds in full, read directly: any host then knows every applied version
// without a Distributed table, and a version it has not replicated yet only
// means an idempotent migration runs again.
const createMigrationsTable = `CREATE TABLE IF NOT EXISTS {{sharedTable "schema_migrations"}} (
    version UInt32,
    name String,
    applied_at DateTime
) ENGINE = {{sharedEngine "schema_migrations" "ReplacingMergeTree()"}}
ORDER BY version`

// CreateMigrationsTable returns the bootstrap statement for a layout.
func CreateMigrationsTable(l Layout) (string, error) {
	if err := l.check(); err != nil {
		return "", err
	}
	return newRenderer(l).render(MigrationsTable, createMigrationsTable)
}

// Migrations returns all migrations in version order, rendered for a layout.
func Migrations(l Layout) ([]Migration, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	entries, err := fs.ReadDir(files, "migrations")
	if err != nil {
		return nil, fmt.Errorf("read embedded migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.ParseUint(num, 10, 32)
		if !ok || err != nil || v == 0 {
			return nil, fmt.Errorf("migration %s: name must start with a version number and '_'", name)
		}
		body, err := files.ReadFile("migrations/" + name)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", name, err)
		}
		sql, err := newRenderer(l).render(name, string(body))
		if err != nil {
			return nil, err
		}
		stmts := Split(sql)
		if len(stmts) == 0 {
			return nil, fmt.Errorf("migration %s: no statements", name)
		}
		out = append(out, Migration{Version: uint32(v), Name: name, Statements: stmts})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("migrations %s and %s share version %d", out[i-1].Name, out[i].Name, out[i].Version)
		}
	}
	return out, nil
}

// Split cuts a SQL file into statements at semicolons that end a line,
// dropping "--" comment lines. Our migrations keep to that shape so that no
// SQL tokenizer is needed.
func Split(sql string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}
