package chcluster_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/testcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/chcluster"
)

// TestClusterReplicates: ON CLUSTER DDL reaches every node, a row inserted
// on one replica reaches the other, and a replica killed while rows are
// inserted on its twin catches up after its restart, as it does after
// ZooKeeper's.
func TestClusterReplicates(t *testing.T) {
	c := chcluster.Start(t, chcluster.Options{})
	n0 := c.Nodes[0]
	n0.Query(t, "CREATE TABLE t_local ON CLUSTER pw (k UInt64) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/t', '{replica}') ORDER BY k")
	n0.Query(t, "CREATE TABLE t ON CLUSTER pw (k UInt64) ENGINE = Distributed(pw, default, t_local, k)")
	count := func(node int, table string) string {
		return strings.TrimSpace(c.Nodes[node].Query(t, "SELECT count() FROM "+table))
	}
	insert := func(node, from, n int) {
		c.Nodes[node].Query(t, fmt.Sprintf("INSERT INTO t SELECT number FROM system.numbers LIMIT %d, %d SETTINGS insert_distributed_sync = 1", from, n))
	}
	insert(0, 0, 100)
	equal := func(what string, want map[int]string) {
		testcheck.Eventually(t, 30*time.Second, what, func() error {
			for node, w := range want {
				if got := count(node, "t_local"); got != w {
					return fmt.Errorf("node %d holds %s rows, want %s", node, got, w)
				}
			}
			return nil
		})
	}
	equal("every replica of both shards", map[int]string{0: "50", 1: "50", 2: "50", 3: "50"})

	c.Kill(1)
	insert(2, 100, 100) // through shard 2's node: shard 1's live replica takes its half
	c.Restart(t, 1)
	equal("the killed replica to catch up", map[int]string{0: "100", 1: "100", 2: "100", 3: "100"})

	c.ZooKeeper.Restart(t)
	testcheck.Eventually(t, 30*time.Second, "inserts after ZooKeeper's restart", func() error {
		_, err := c.Nodes[0].TryQuery("INSERT INTO t SELECT number FROM system.numbers LIMIT 200, 100 SETTINGS insert_distributed_sync = 1")
		return err
	})
	equal("every replica after ZooKeeper's restart", map[int]string{0: "150", 1: "150", 2: "150", 3: "150"})
	if got := count(3, "t"); got != "300" {
		t.Fatalf("Distributed count %s, want 300", got)
	}
}

// TestClusterAddsAStandbyNode: a node listed later joins the cluster.
func TestClusterAddsAStandbyNode(t *testing.T) {
	c := chcluster.Start(t, chcluster.Options{Standby: []int{3}})
	if got := len(c.Addrs()); got != 3 {
		t.Fatalf("%d addresses, want 3", got)
	}
	c.Add(t, 3)
	if got := strings.TrimSpace(c.Nodes[3].Query(t, "SELECT count() FROM system.clusters WHERE cluster = 'pw'")); got != "4" {
		t.Fatalf("node 3 lists %s hosts", got)
	}
}
