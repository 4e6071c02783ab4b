// Package schema holds pagewatch's ClickHouse tables as versioned SQL
// migrations, embedded in the binaries. Applying them is the ClickHouse
// sink's job; this package only knows what they are.
//
// Every statement must be idempotent (IF NOT EXISTS and the like): ClickHouse
// has no transactional DDL, so a migration interrupted half-way is simply
// run again.
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

// CreateMigrationsTable is the bootstrap statement, run before any migration.
const CreateMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version UInt32,
    name String,
    applied_at DateTime
) ENGINE = ReplacingMergeTree()
ORDER BY version`

// Migrations returns all migrations in version order.
func Migrations() ([]Migration, error) {
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
		stmts := Split(string(body))
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
