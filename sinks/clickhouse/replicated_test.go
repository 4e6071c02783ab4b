package clickhouse

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/sqlcheck"
	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/chcluster"
	"github.com/pagewatch/pagewatch/schema"
)

// The tests on a replicated cluster: 2 shards × 2 replicas of 18.16 on
// ZooKeeper (chcluster), the schema applied by Migrate ON CLUSTER.

// openCluster connects to every node, as clickhouse.addr would list them.
func openCluster(t *testing.T, c *chcluster.Cluster) *Client {
	t.Helper()
	cfg := testClusterConfig()
	cfg.Addr = c.Addrs()
	cl, err := Open(context.Background(), cfg, slog.New(slog.NewTextHandler(t.Output(), nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// nodeCount is one number a node answers.
func nodeCount(t *testing.T, n *chcluster.Node, sql string) string {
	t.Helper()
	return strings.TrimSpace(n.Query(t, sql))
}

// replicasAgree waits until both replicas of each shard hold the same
// rows of a local table, and returns the shards' counts.
func replicasAgree(t *testing.T, c *chcluster.Cluster, sql string) []string {
	t.Helper()
	var out []string
	testcheck.Eventually(t, 30*time.Second, "the replicas of each shard to agree on "+sql, func() error {
		out = out[:0]
		for s := 1; s <= 2; s++ {
			var got []string
			for _, i := range c.ShardNodes(s) {
				got = append(got, nodeCount(t, c.Nodes[i], sql))
			}
			if got[0] != got[1] {
				return fmt.Errorf("shard %d's replicas hold %v", s, got)
			}
			out = append(out, got[0])
		}
		return nil
	})
	return out
}

// TestClusterSealWaitsForLaggingReplicas: with the replicas of shard 1
// fetching nothing, half of what the loader inserted there is on one
// replica only, and a Distributed read that takes the other misses it.
// SealDays must then wait (here: time out) rather than seal short
// totals, and once fetches resume it seals exact totals that both
// replicas of each shard hold, which is also checked for page_days
// itself lagging.
func TestClusterSealWaitsForLaggingReplicas(t *testing.T) {
	c := chcluster.Start(t, chcluster.Options{})
	cl := openCluster(t, c)
	ctx := context.Background()
	began := time.Now()
	if _, err := cl.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("migrations ON CLUSTER in %v", time.Since(began).Round(time.Millisecond))
	shard1 := c.ShardNodes(1)
	fetches := func(table, verb string) {
		for _, i := range shard1 {
			c.Nodes[i].Query(t, "SYSTEM "+verb+" FETCHES pagewatch."+table)
		}
	}
	fetches("page_minutes_local", "STOP")
	base := time.Date(2024, 3, 10, 12, 0, 0, 0, time.UTC)
	if err := cl.Hits().InsertHits(ctx, clusterBatches(base)); err != nil {
		t.Fatal(err)
	}
	a, b := nodeCount(t, c.Nodes[shard1[0]], "SELECT count() FROM pagewatch.page_minutes_local"), nodeCount(t, c.Nodes[shard1[1]], "SELECT count() FROM pagewatch.page_minutes_local")
	if a == b {
		t.Fatalf("shard 1's replicas both hold %s page-minute rows with fetches stopped: no lag to test", a)
	}
	t.Logf("shard 1's replicas hold %s and %s page-minute rows", a, b)

	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	n, err := cl.Counts().SealDays(short, base)
	cancel()
	if err == nil || n != 0 {
		t.Fatalf("SealDays with a replica behind = %d, %v; want it to wait and fail", n, err)
	}
	t.Logf("as wanted, SealDays with a replica behind: %v", err)
	if got := nodeCount(t, c.Nodes[0], "SELECT count() FROM pagewatch.sealed_days"); got != "0" {
		t.Fatalf("sealed_days holds %s rows after a seal that could not see every part", got)
	}

	fetches("page_minutes_local", "START")
	// page_days behind now: the sums reach one replica of shard 1 only,
	// and the day must not be recorded sealed until both have them.
	fetches("page_days_local", "STOP")
	short, cancel = context.WithTimeout(ctx, 3*time.Second)
	n, err = cl.Counts().SealDays(short, base)
	cancel()
	if err == nil || n != 0 {
		t.Fatalf("SealDays with page_days behind = %d, %v; want it to wait and fail", n, err)
	}
	if got := nodeCount(t, c.Nodes[0], "SELECT count() FROM pagewatch.sealed_days"); got != "0" {
		t.Fatalf("a day was recorded sealed while a replica lacked its totals (%s rows)", got)
	}
	fetches("page_days_local", "START")
	if n, err := cl.Counts().SealDays(ctx, base); err != nil || n != 1 {
		t.Fatalf("SealDays = %d, %v; want 1 day", n, err)
	}
	// Every replica holds the day's totals (all 100 hits of the day
	// before base), whichever one a read takes.
	for _, node := range c.Nodes {
		if got := nodeCount(t, node, "SELECT sum(hits) FROM (SELECT site, path, day, argMax(hits, version) AS hits FROM pagewatch.page_days_local GROUP BY site, path, day)"); got == "0" {
			t.Errorf("node %s holds no page_days", node.Addr)
		}
	}
	days := replicasAgree(t, c, "SELECT sum(hits) FROM (SELECT site, path, day, argMax(hits, version) AS hits FROM pagewatch.page_days_local GROUP BY site, path, day)")
	if got := fmt.Sprint(days); got != "[48 52]" && got != "[52 48]" {
		t.Errorf("page_days per shard %v, want 100 hits in all (48 and 52, as the pages hash)", days)
	}
	if total, err := cl.Hits().HitCount(ctx); err != nil || total != 200 {
		t.Errorf("HitCount = %d, %v; want 200", total, err)
	}
}

// TestClusterNodeAddedLater: a replica started after the migrations ran
// (listed in remote_servers then) gets every table from the next
// Migrate, which any daemon runs at start, and then the rows of its
// shard from its twin.
func TestClusterNodeAddedLater(t *testing.T) {
	c := chcluster.Start(t, chcluster.Options{Standby: []int{3}})
	cl := openCluster(t, c)
	ctx := context.Background()
	if _, err := cl.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2024, 3, 10, 12, 0, 0, 0, time.UTC)
	if err := cl.Hits().InsertHits(ctx, clusterBatches(base)); err != nil {
		t.Fatal(err)
	}
	c.Add(t, 3)
	if got := nodeCount(t, c.Nodes[3], "SELECT count() FROM system.tables WHERE database = 'pagewatch'"); got != "0" {
		t.Fatalf("the new node has %s tables before Migrate", got)
	}
	n, err := cl.Migrate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := nodeCount(t, c.Nodes[0], "SELECT count() FROM system.tables WHERE database = 'pagewatch'")
	if got := nodeCount(t, c.Nodes[3], "SELECT count() FROM system.tables WHERE database = 'pagewatch'"); got != want {
		t.Fatalf("the new node has %s tables after Migrate (%d migrations), node 0 has %s", got, n, want)
	}
	replicasAgree(t, c, "SELECT count() FROM pagewatch.hits_local")
	// Nothing is missing now: the next Migrate applies nothing.
	if n, err := cl.Migrate(ctx); err != nil || n != 0 {
		t.Fatalf("Migrate again = %d, %v; want 0", n, err)
	}
}

// remoteRE is a remote() over one system table with its bound arguments.
var remoteRE = regexp.MustCompile(`remote\('[^']*', (system\.\w+), '[^']*', '[^']*'\)`)

// chDB has no cluster to call remote() on, so the replication and table
// checks run on its own system tables: their columns and types are those
// of current ClickHouse too (18.16 runs them on chcluster above).
func TestClusterReplicationQueriesRunOnCurrentEngine(t *testing.T) {
	var stmts []sqlcheck.Statement
	for _, name := range []string{"queryClusterHosts", "queryReplicationMark", "queryReplicasBehind", "queryTablesByHost"} {
		stmts = append(stmts, sqlcheck.Statement{Name: "clickhouse." + name + " (on this server's tables)", SQL: remoteRE.ReplaceAllString(clusterRuns[name], "$1")})
	}
	for _, r := range sqlcheck.Query(t, stmts) {
		if strings.Contains(r.Output, "remote(") {
			t.Errorf("%s: remote() left in", r.Name)
		}
	}
}

func TestTablesCreatedAreTheSchemas(t *testing.T) {
	layout := testClusterConfig().layout()
	migrations, err := schema.Migrations(layout)
	if err != nil {
		t.Fatal(err)
	}
	bootstrap, err := schema.CreateMigrationsTable(layout)
	if err != nil {
		t.Fatal(err)
	}
	got := tablesCreated(bootstrap, migrations)
	for _, name := range []string{"schema_migrations", "hits", "hits_local", "page_minutes_local", "page_hours", "crossing_whys_local"} {
		if !got[name] {
			t.Errorf("%s is not among the tables created: %v", name, got)
		}
	}
	if len(got)%2 != 1 { // each table's two halves, and schema_migrations
		t.Errorf("%d tables created: %v", len(got), got)
	}
}
