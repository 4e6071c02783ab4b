package clickhouse

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/hit"
	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/internal/sqlcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/schema"
)

// The replicated cluster (2 shards × 2 replicas on ZooKeeper) is tested
// in replicated_test.go and internal/e2e. What is proven here:
//
//   - every cluster statement parses on the current engine (EXPLAIN AST)
//     and on 18.16 (it fails for want of ZooKeeper, never as a syntax error);
//   - the de-clustered statements (no ON CLUSTER, plain engines) run on
//     both, which proves columns, engine arguments and sharding keys;
//   - on two 18.16 servers made a two-shard cluster, with the de-clustered
//     DDL applied to each as ON CLUSTER would, the Distributed tables take
//     the client's inserts and keep every count exact.

// testClusterConfig is the cluster mode configuration the tests render.
func testClusterConfig() Config {
	cfg := DefaultConfig()
	cfg.Cluster = "pw"
	return cfg
}

// clusterRuns gives the cluster-only statements of queries.go a form for
// the parse checks; the listing also runs on the two-shard 18.16 cluster.
var clusterRuns = map[string]string{
	"queryHitsPartitionsBeforeOnCluster": bind(queryHitsPartitionsBeforeOnCluster, "pw", "pagewatch", int64(1800000000)),
	"alterDropHitsPartitionOnCluster":    bind(fmt.Sprintf(alterDropHitsPartitionOnCluster, "pagewatch", "pw"), "20231114"),
	"queryClusterHosts":                  bind(queryClusterHosts, "pw"),
	"queryReplicationMark":               bind(queryReplicationMark, "127.0.0.1:9000,127.0.0.1:9001", "default", "", "pagewatch", "page_minutes_local"),
	"queryReplicasBehind": bind(queryReplicasBehind, "127.0.0.1:9000,127.0.0.1:9001", "default", "", "pagewatch", "page_minutes_local",
		sqlText("['/clickhouse/tables/01/pagewatch/page_minutes_local/replicas/s1r1']"), sqlText("[7]"), int64(1800000000)),
	"queryTablesByHost": bind(queryTablesByHost, "127.0.0.1:9000", "default", "", "pagewatch"),
}

// sqlText is bound as it is: the client's literal of a slice.
type sqlText string

// clusterDDL lists the cluster mode statements of cfg, bootstrap first.
func clusterDDL(t *testing.T, cfg Config) []sqlcheck.Statement {
	t.Helper()
	bootstrap, err := schema.CreateMigrationsTable(cfg.layout())
	if err != nil {
		t.Fatal(err)
	}
	migrations, err := schema.Migrations(cfg.layout())
	if err != nil {
		t.Fatal(err)
	}
	stmts := []sqlcheck.Statement{{Name: "cluster schema.CreateMigrationsTable", SQL: bootstrap}}
	for _, m := range migrations {
		for i, s := range m.Statements {
			stmts = append(stmts, sqlcheck.Statement{Name: fmt.Sprintf("cluster schema %s #%d", m.Name, i+1), SQL: s})
		}
	}
	return stmts
}

var (
	onClusterRE  = regexp.MustCompile(" ON CLUSTER `[^`]*`")
	replicatedRE = regexp.MustCompile(`Replicated(\w*MergeTree)\('[^']*', '[^']*'(, )?`)
	// distributedRE captures the database, the local table and the key.
	distributedRE = regexp.MustCompile(`ENGINE = Distributed\('[^']*', '(\w+)', '(\w+)', (.+)\)$`)
)

// decluster is what ON CLUSTER runs on each host, minus replication: the
// statement without ON CLUSTER, on the plain engine with the same
// arguments.
func decluster(sql string) string {
	return replicatedRE.ReplaceAllString(onClusterRE.ReplaceAllString(sql, ""), "${1}(")
}

func TestClusterStatementsParseOnCurrentEngine(t *testing.T) {
	var stmts []sqlcheck.Statement
	for _, s := range clusterDDL(t, testClusterConfig()) {
		stmts = append(stmts, sqlcheck.Statement{Name: s.Name, SQL: "EXPLAIN AST " + s.SQL})
	}
	for name, sql := range clusterRuns {
		stmts = append(stmts, sqlcheck.Statement{Name: "clickhouse." + name, SQL: "EXPLAIN AST " + sql})
	}
	version := sqlcheck.Run(t, stmts)
	t.Logf("%d cluster statements parsed on ClickHouse %s (chDB)", len(stmts), version)
}

// chDB has no clusters at all, so a Distributed table cannot be created.
// It is replaced by a Merge table over the local one, which has the same
// role on one server (the plain name reads the _local rows), and its
// sharding key is evaluated on the local table: a Distributed key must be
// an integer.
func TestDeclusteredStatementsRunOnCurrentEngine(t *testing.T) {
	stmts := []sqlcheck.Statement{{Name: "create database", SQL: "CREATE DATABASE IF NOT EXISTS pagewatch"}}
	var keyChecks []int
	for _, s := range clusterDDL(t, testClusterConfig()) {
		sql := decluster(s.SQL)
		if m := distributedRE.FindStringSubmatch(sql); m != nil {
			db, local, key := m[1], m[2], m[3]
			sql = distributedRE.ReplaceAllString(sql, fmt.Sprintf("ENGINE = Merge(%s, '^%s$$')", db, local))
			stmts = append(stmts, sqlcheck.Statement{Name: s.Name + " (its Merge stand-in)", SQL: sql})
			keyChecks = append(keyChecks, len(stmts))
			// any() over no rows still yields one row, of the key's type.
			stmts = append(stmts, sqlcheck.Statement{Name: s.Name + " (its sharding key)", SQL: fmt.Sprintf("SELECT toTypeName(any(%s)) FROM %s.%s", key, db, local)})
			continue
		}
		stmts = append(stmts, sqlcheck.Statement{Name: s.Name + " (de-clustered)", SQL: sql})
	}
	// Queries keep their plain names in cluster mode.
	stmts = append(stmts, sqlcheck.Statement{Name: "use", SQL: "USE pagewatch"})
	for _, name := range queryConstNames(t) {
		if strings.HasPrefix(name, "query") && sampleRuns[name] != "" {
			stmts = append(stmts, sqlcheck.Statement{Name: "clickhouse." + name + " on the cluster tables", SQL: sampleRuns[name]})
		}
	}
	results := sqlcheck.Query(t, stmts)
	intType := regexp.MustCompile(`^"U?Int(8|16|32|64)"\n$`)
	for _, i := range keyChecks {
		if r := results[i]; r.Err == "" && !intType.MatchString(r.Output) {
			t.Errorf("%s: type %q, but a Distributed sharding key must be an integer", r.Name, r.Output)
		}
	}
	t.Logf("%d de-clustered statements ran on chDB", len(stmts))
}

// httpQuery runs sql on a test server and returns its error, which
// clickhousetest.Server.Query would turn into a test failure.
func httpQuery(srv *clickhousetest.Server, sql string) error {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Post("http://"+srv.HTTPAddr+"/", "text/plain", strings.NewReader(sql))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// startTwoShards starts two 18.16 servers that both know cluster "pw":
// shard 1 is the first server, shard 2 the second. The cluster goes into
// config.d, which the server reads at start, hence the restart.
func startTwoShards(t *testing.T) [2]*clickhousetest.Server {
	t.Helper()
	srvs := [2]*clickhousetest.Server{clickhousetest.Start(t), clickhousetest.Start(t)}
	var shards strings.Builder
	for _, s := range srvs {
		host, port, err := net.SplitHostPort(s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&shards, "<shard><internal_replication>true</internal_replication><replica><host>%s</host><port>%s</port></replica></shard>", host, port)
	}
	xml := "<yandex><remote_servers><pw>" + shards.String() + "</pw></remote_servers></yandex>\n"
	for _, s := range srvs {
		dir := filepath.Join(s.Dir, "config.d")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cluster.xml"), []byte(xml), 0o644); err != nil {
			t.Fatal(err)
		}
		s.Restart(t)
		if got := s.Query(t, "SELECT count() FROM system.clusters WHERE cluster = 'pw'"); got != "2\n" {
			t.Fatalf("cluster pw on %s: %q shards", s.Addr, got)
		}
	}
	return srvs
}

// clusterBatches are hits of many pages, so that both shards get some,
// over two days, so that there are two partitions.
func clusterBatches(base time.Time) []hit.Batch {
	var out []hit.Batch
	for seq := uint64(1); seq <= 4; seq++ {
		b := hit.Batch{Seq: seq}
		at := base.Add(-time.Duration(seq%2) * 24 * time.Hour)
		for i := 0; i < 50; i++ {
			b.Hits = append(b.Hits, hit.Hit{
				Time: at.Add(time.Duration(i) * time.Second), Site: "example.com",
				Path: fmt.Sprintf("/p%d", i%20), Status: 200, Offset: uint64(i * 100),
			})
		}
		out = append(out, b)
	}
	return out
}

func TestTwoShardClusterOn1816(t *testing.T) {
	srvs := startTwoShards(t)
	ctx := context.Background()
	cfg := testClusterConfig()

	// Every statement ON CLUSTER parses on 18.16: it fails only because
	// there is no ZooKeeper for the distributed DDL queue.
	ddl := clusterDDL(t, cfg)
	checks := append([]sqlcheck.Statement(nil), ddl...)
	checks = append(checks, sqlcheck.Statement{Name: "clickhouse.alterDropHitsPartitionOnCluster", SQL: clusterRuns["alterDropHitsPartitionOnCluster"]})
	for _, s := range checks {
		err := httpQuery(srvs[0], s.SQL)
		switch {
		case err == nil:
			t.Errorf("%s ran ON CLUSTER without ZooKeeper?", s.Name)
		case strings.Contains(err.Error(), "Syntax error"):
			t.Errorf("%s does not parse on 18.16: %v", s.Name, err)
		case s.Name == ddl[0].Name:
			t.Logf("as expected, ON CLUSTER without ZooKeeper: %v", err)
		}
	}

	// What ON CLUSTER would run on each host, minus replication. The
	// Distributed tables are the real ones.
	for _, srv := range srvs {
		srv.Query(t, "CREATE DATABASE IF NOT EXISTS pagewatch")
		for _, s := range ddl {
			if err := httpQuery(srv, decluster(s.SQL)); err != nil {
				t.Fatalf("%s de-clustered on 18.16: %v\n%s", s.Name, err, decluster(s.SQL))
			}
		}
	}

	cfg.Addr = []string{srvs[0].Addr}
	c, err := Open(ctx, cfg, slog.New(slog.NewTextHandler(t.Output(), nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	base := time.Date(2024, 3, 10, 12, 0, 0, 0, time.UTC)
	for i := 0; i < 2; i++ { // a batch loaded twice counts once
		if err := c.Hits().InsertHits(ctx, clusterBatches(base)); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := c.Hits().HitCount(ctx); err != nil || n != 200 {
		t.Fatalf("HitCount = %d, %v; want 200", n, err)
	}
	for p, want := range map[string]uint64{"/p0": 12, "/p19": 8} {
		if n, err := c.Hits().PageCount(ctx, "example.com", p, time.Time{}); err != nil || n != want {
			t.Errorf("PageCount(%s) = %d, %v; want %d", p, n, err, want)
		}
	}

	// Both shards hold rows, and every page is on one shard only.
	shardOf := map[string]int{}
	for i, srv := range srvs {
		for _, table := range []string{"hits_local", "page_minutes_local"} {
			out := srv.Query(t, "SELECT DISTINCT path FROM pagewatch."+table)
			if out == "" {
				t.Errorf("shard %d holds no %s rows", i+1, table)
			}
			for _, p := range strings.Fields(out) {
				if s, ok := shardOf[p]; ok && s != i {
					t.Errorf("page %s is on shards %d and %d", p, s+1, i+1)
				}
				shardOf[p] = i
			}
		}
	}
	if len(shardOf) != 20 {
		t.Errorf("pages found on the shards: %d, want 20", len(shardOf))
	}

	// The sweep's read side through the Distributed tables: the day
	// before base is sealed, and counts come out as on one server, each
	// page's sealed days on its own shard.
	if n, err := c.Counts().SealDays(ctx, base); err != nil || n != 1 {
		t.Fatalf("SealDays = %d, %v; want 1 day", n, err)
	}
	if n, err := c.Counts().SealDays(ctx, base); err != nil || n != 0 {
		t.Fatalf("SealDays again = %d, %v; want 0", n, err)
	}
	counts, err := c.Counts().WindowCounts(ctx, traffic.WindowQuery{Starts: []time.Time{{}, base.Truncate(24 * time.Hour)}, End: base.Add(time.Hour), SealedBefore: base})
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 20 {
		t.Errorf("WindowCounts returned %d pages, want 20", len(counts))
	}
	for _, p := range counts {
		want := map[string][]uint64{"/p0": {12, 6}, "/p19": {8, 4}}[p.Path]
		if want != nil && fmt.Sprint(p.Counts) != fmt.Sprint(want) {
			t.Errorf("WindowCounts %s = %v, want %v", p.Path, p.Counts, want)
		}
	}
	for i, srv := range srvs {
		for _, p := range strings.Fields(srv.Query(t, "SELECT DISTINCT path FROM pagewatch.page_days_local")) {
			if shardOf[p] != i {
				t.Errorf("page %s sealed on shard %d, its minutes are on shard %d", p, i+1, shardOf[p]+1)
			}
		}
	}
	scanned := 0
	err = c.Counts().ScanMinutes(ctx, traffic.MinuteScan{From: base.Add(-48 * time.Hour), To: base.Add(time.Hour)}, func(_, _ string, _ time.Time, hits uint64) error {
		scanned += int(hits)
		return nil
	})
	if err != nil || scanned != 200 {
		t.Errorf("ScanMinutes summed %d hits, %v; want 200", scanned, err)
	}

	// The partition list covers every shard: a day only shard 2 holds is
	// found through a client of shard 1.
	srvs[1].Query(t, "INSERT INTO pagewatch.hits_local (ts, site, path, referer, seq, line_offset) SELECT toDateTime('2024-01-02 00:00:00'), 's', '/only-here', '', 99, 0")
	ids, err := c.Hits().hitsPartitionsBefore(ctx, base)
	if want := "[20240102 20240309]"; err != nil || fmt.Sprint(ids) != want {
		t.Fatalf("partitions before %s: %v, %v; want %s", base, ids, err, want)
	}
}

func TestClusterConfigValidate(t *testing.T) {
	if err := testClusterConfig().Validate(); err != nil {
		t.Fatalf("defaults with a cluster: %v", err)
	}
	// Unused on one server, so not checked there.
	single := DefaultConfig()
	single.Replica = "r1"
	if err := single.Validate(); err != nil {
		t.Fatalf("single node with a literal replica: %v", err)
	}
	cases := []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Cluster = "pw`; DROP" }, "clickhouse.cluster: "},
		{func(c *Config) { c.ReplicationPath = "clickhouse/{shard}/{table}" }, "clickhouse.replication_path: must start"},
		{func(c *Config) { c.ReplicationPath = "/ch/{shard}/{table}'" }, "clickhouse.replication_path: must hold no quote"},
		{func(c *Config) { c.ReplicationPath = "/ch/{shard}/{database}" }, "clickhouse.replication_path: must contain {table}"},
		{func(c *Config) { c.ReplicationPath = "/ch/{database}/{table}" }, "clickhouse.replication_path: must contain {shard}"},
		{func(c *Config) { c.Replica = "r1" }, "clickhouse.replica: must contain a server macro"},
		{func(c *Config) { c.Replica = "" }, "clickhouse.replica: must contain a server macro"},
	}
	for _, tc := range cases {
		cfg := testClusterConfig()
		tc.edit(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", cfg, err, tc.want)
		}
	}
}
