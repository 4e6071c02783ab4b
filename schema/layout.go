package schema

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"text/template"
)

// Layout says how the tables are laid out over servers. The zero Layout is
// one server: the plain DDL, unchanged from before cluster mode existed.
//
// With Cluster set, every table X of a migration becomes two, both created
// ON CLUSTER:
//
//   - X_local, the rows of one shard, on a Replicated* engine;
//   - X, a Distributed table over the X_local tables of all shards, sharded
//     by the key the migration names.
//
// Queries and inserts keep using the plain names, so nothing outside the
// DDL changes. The cluster's remote_servers entry should set
// internal_replication to true: the Replicated tables copy rows between
// replicas, and Distributed writing to every replica as well would store
// each row twice.
type Layout struct {
	// Cluster is a cluster of the servers' remote_servers; "" means one
	// server.
	Cluster string
	// Database holds the tables. In cluster mode every statement names it,
	// because ON CLUSTER runs a statement on each host in that host's
	// default database, which need not be ours.
	Database string
	// ReplicationPath is the coordination (ZooKeeper) path of each
	// replicated table. {database} and {table} are expanded here, because
	// ClickHouse 18.16 only knows the macros of its <macros> section;
	// {shard} and other macros are left to the server.
	ReplicationPath string
	// Replica is the replica name, normally the server macro {replica}.
	Replica string
}

// Clustered reports whether the layout spans a cluster.
func (l Layout) Clustered() bool { return l.Cluster != "" }

// localSuffix names a table's shard-local half in cluster mode: hits_local.
const localSuffix = "_local"

// sharedShard replaces {shard} in the path of a table every host holds in
// full (schema_migrations), so that all hosts are replicas of one table.
// No sharded table can collide with it: their names end in localSuffix.
const sharedShard = "shared"

var (
	// A cluster name is an XML element name in remote_servers.
	clusterRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,127}$`)
	// Same rule as the clickhouse.database key: safe unquoted in SQL.
	databaseRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
	// An engine as migrations spell it: MergeTree(), ReplacingMergeTree(ver).
	engineRE = regexp.MustCompile(`^([A-Za-z]*MergeTree)\((.*)\)$`)
)

// check refuses values that would make broken or injected SQL. The
// clickhouse.* config keys are validated with friendlier messages first;
// this guards every other caller.
func (l Layout) check() error {
	if !l.Clustered() {
		return nil
	}
	if !clusterRE.MatchString(l.Cluster) {
		return fmt.Errorf("layout: cluster %q: want letters, digits, '_', '.', '-'", l.Cluster)
	}
	if !databaseRE.MatchString(l.Database) {
		return fmt.Errorf("layout: database %q: want letters, digits, '_'", l.Database)
	}
	for _, s := range []string{l.ReplicationPath, l.Replica} {
		if s == "" || strings.ContainsAny(s, `'\`+"\n") {
			return fmt.Errorf("layout: replication path %q / replica %q: must be set and hold no quote, backslash or newline", l.ReplicationPath, l.Replica)
		}
	}
	if !strings.Contains(l.ReplicationPath, "{table}") {
		return fmt.Errorf("layout: replication path %q lacks {table}", l.ReplicationPath)
	}
	return nil
}

// renderer executes one template and remembers which tables it declared,
// so that a migration forgetting the Distributed half of a table fails in
// every layout, not only on a cluster.
type renderer struct {
	Layout
	tables, engines, distributed map[string]bool
}

func newRenderer(l Layout) *renderer {
	return &renderer{Layout: l, tables: map[string]bool{}, engines: map[string]bool{}, distributed: map[string]bool{}}
}

// render executes a migration template. The functions it offers:
//
//	{{table "hits"}}         the name after CREATE TABLE IF NOT EXISTS:
//	                         hits, or db.hits_local ON CLUSTER `c`
//	{{engine "hits" "ReplacingMergeTree()"}}
//	                         the engine, or its Replicated form
//	{{distributed "hits" "cityHash64(site, path)"}}
//	                         nothing, or the statement creating the
//	                         Distributed table hits, ending in ";"
//	{{sharedTable "t"}} {{sharedEngine "t" "..."}}
//	                         a table every host holds in full (cluster
//	                         mode: one replicated table, no Distributed)
func (r *renderer) render(name, text string) (string, error) {
	t, err := template.New(name).Option("missingkey=error").Funcs(template.FuncMap{
		"table":        r.table,
		"engine":       r.engine,
		"distributed":  r.distributedTable,
		"sharedTable":  r.sharedTable,
		"sharedEngine": r.sharedEngine,
	}).Parse(text)
	if err != nil {
		return "", fmt.Errorf("parse template %s: %w", name, err)
	}
	var out bytes.Buffer
	if err := t.Execute(&out, nil); err != nil {
		return "", fmt.Errorf("render %s: %w", name, err)
	}
	var missing []string
	for table := range r.tables {
		if !r.engines[table] || !r.distributed[table] {
			missing = append(missing, table)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return "", fmt.Errorf("render %s: tables %v need both {{engine}} and {{distributed}}, or cluster mode would lack a half", name, missing)
	}
	return out.String(), nil
}

func (r *renderer) table(name string) string {
	r.tables[name] = true
	if !r.Clustered() {
		return name
	}
	return r.qualified(name+localSuffix) + r.onCluster()
}

func (r *renderer) engine(name, engine string) (string, error) {
	r.engines[name] = true
	if !r.Clustered() {
		return engine, nil
	}
	return r.replicated(engine, r.path("", name+localSuffix), r.Replica)
}

func (r *renderer) distributedTable(name, shardingKey string) string {
	r.distributed[name] = true
	if !r.Clustered() {
		return ""
	}
	local := name + localSuffix
	return fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s%s AS %s\nENGINE = Distributed(%s, %s, %s, %s);",
		r.qualified(name), r.onCluster(), r.qualified(local),
		quote(r.Cluster), quote(r.Database), quote(local), shardingKey)
}

func (r *renderer) sharedTable(name string) string {
	if !r.Clustered() {
		return name
	}
	return r.qualified(name) + r.onCluster()
}

// sharedEngine replicates a table over every host of the cluster: its path
// has no shard in it, and its replica names are prefixed with the shard
// because clusters often reuse replica names (01, 02) in every shard.
func (r *renderer) sharedEngine(name, engine string) (string, error) {
	if !r.Clustered() {
		return engine, nil
	}
	return r.replicated(engine, r.path(sharedShard, name), "{shard}-"+r.Replica)
}

// path expands {database} and {table}, and {shard} when shard is set.
func (r *renderer) path(shard, table string) string {
	pairs := []string{"{database}", r.Database, "{table}", table}
	if shard != "" {
		pairs = append(pairs, "{shard}", shard)
	}
	return strings.NewReplacer(pairs...).Replace(r.ReplicationPath)
}

func (r *renderer) replicated(engine, path, replica string) (string, error) {
	m := engineRE.FindStringSubmatch(engine)
	if m == nil {
		return "", fmt.Errorf("engine %q: want a MergeTree-family engine with parentheses, like ReplacingMergeTree()", engine)
	}
	args := quote(path) + ", " + quote(replica)
	if strings.TrimSpace(m[2]) != "" {
		args += ", " + m[2]
	}
	return "Replicated" + m[1] + "(" + args + ")", nil
}

func (r *renderer) qualified(table string) string { return r.Database + "." + table }

// onCluster backquotes the name: it may hold '-' and '.'.
func (r *renderer) onCluster() string { return " ON CLUSTER `" + r.Cluster + "`" }

// quote makes a string literal of a value check has cleared of quotes and
// backslashes.
func quote(s string) string { return "'" + s + "'" }
