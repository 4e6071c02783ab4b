// Package chcluster starts a replicated ClickHouse cluster for tests: one
// standalone ZooKeeper (Debian's zookeeper package, run with java) and
// clickhouse-server processes as shards × replicas, all on loopback ports
// picked at runtime, each in its own temporary directory:
//
//	c := chcluster.Start(t, chcluster.Options{})  // 2 shards × 2 replicas
//	cfg.Cluster, cfg.Addr = c.Name, c.Addrs()
//	c.Kill(1)                       // SIGKILL shard 1's second replica
//	c.Restart(t, 1)                 // same ports, config and data
//	c.ZooKeeper.Restart(t)
//
// Every server knows cluster Name in remote_servers with
// internal_replication (the Replicated tables copy rows between
// replicas), the macros {shard} and {replica}, ZooKeeper, and the
// distributed DDL queue that ON CLUSTER needs.
//
// Without java, the ZooKeeper jars or a ClickHouse server the test is
// skipped, or fails when $CI is set.
package chcluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/freeport"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
)

// Name is the cluster's name in remote_servers.
const Name = "pw"

// Options shape the cluster.
type Options struct {
	// Shards and Replicas per shard; 0 means 2.
	Shards, Replicas int
	// Standby nodes (indexes into Nodes) are configured but neither started
	// nor listed in the cluster until Add: a server added to a cluster
	// that is already running.
	Standby []int
}

// Cluster is a running ZooKeeper and its ClickHouse servers.
type Cluster struct {
	Name      string
	ZooKeeper *ZooKeeper
	// Nodes are ordered by shard, then replica: with 2 × 2, nodes 0 and 1
	// are shard 1's replicas, 2 and 3 shard 2's.
	Nodes []*Node

	mu     sync.Mutex
	member map[int]bool // listed in remote_servers
}

// Node is one clickhouse-server of the cluster.
type Node struct {
	*clickhousetest.Server
	Shard, Replica  int // from 1, as in the macros
	InterserverPort int
}

// Start starts ZooKeeper, then every node but the standby ones at once, and
// returns when all answer. Everything stops with t.Cleanup.
//
// Ports are picked free (internal/freeport, below the kernel's ephemeral
// range), then bound when the servers start; a test binary run beside
// this one can still pick the same port in between, so a start that
// finds its address in use is tried again on fresh ports, up to three
// times.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	for attempt := 1; ; attempt++ {
		c, err := start(t, opts)
		if err == nil {
			return c
		}
		if attempt == 3 || !strings.Contains(err.Error(), "Address already in use") {
			t.Fatal(err)
		}
		t.Logf("chcluster: a port was taken before the servers bound it; again on fresh ports: %v", firstLine(err))
	}
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func start(t testing.TB, opts Options) (*Cluster, error) {
	t.Helper()
	began := time.Now()
	shards, replicas := orDefault(opts.Shards, 2), orDefault(opts.Replicas, 2)
	c := &Cluster{Name: Name, ZooKeeper: newZooKeeper(t), member: map[int]bool{}}
	for s := 1; s <= shards; s++ {
		for r := 1; r <= replicas; r++ {
			port, err := freeport.One()
			if err != nil {
				return nil, err
			}
			i := len(c.Nodes)
			c.Nodes = append(c.Nodes, &Node{Server: clickhousetest.Prepare(t, clickhousetest.Options{}), Shard: s, Replica: r, InterserverPort: port})
			c.member[i] = !slices.Contains(opts.Standby, i)
		}
	}
	if err := c.writeConfigs(); err != nil {
		return nil, err
	}
	// Registered after each node's own Stop, so it runs first: the nodes
	// shut down at once (each takes a second or two) rather than in turn.
	t.Cleanup(c.stopAll)
	// ZooKeeper first: a server that starts without it has read-only
	// replicated tables until it reconnects.
	if err := c.ZooKeeper.Launch(); err != nil {
		c.stopAll()
		return nil, err
	}
	var up []int
	for i := range c.Nodes {
		if c.member[i] {
			up = append(up, i)
		}
	}
	if err := c.launch(up...); err != nil {
		c.stopAll()
		c.ZooKeeper.Kill()
		return nil, err
	}
	t.Logf("chcluster: ZooKeeper %s and %d of %d clickhouse-servers (%d shards × %d replicas) ready in %v",
		c.ZooKeeper.Addr, len(up), len(c.Nodes), shards, replicas, time.Since(began).Round(time.Millisecond))
	return c, nil
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Addrs are the native addresses of the nodes in the cluster, for
// clickhouse.addr.
func (c *Cluster) Addrs() []string { return c.memberAddrs(func(n *Node) string { return n.Addr }) }

// HTTPAddrs are the HTTP addresses of the nodes in the cluster, for
// clickhouse.http_addr (the loader's inserts), in Addrs' order.
func (c *Cluster) HTTPAddrs() []string {
	return c.memberAddrs(func(n *Node) string { return n.HTTPAddr })
}

func (c *Cluster) memberAddrs(addr func(*Node) string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for i, n := range c.Nodes {
		if c.member[i] {
			out = append(out, addr(n))
		}
	}
	return out
}

// ShardNodes are the indexes of a shard's replicas (shard from 1).
func (c *Cluster) ShardNodes(shard int) []int {
	var out []int
	for i, n := range c.Nodes {
		if n.Shard == shard {
			out = append(out, i)
		}
	}
	return out
}

// Kill SIGKILLs nodes, as a crash would. Ports and data stay for Restart.
func (c *Cluster) Kill(nodes ...int) {
	var wg sync.WaitGroup
	for _, i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Nodes[i].Kill()
		}()
	}
	wg.Wait()
}

// Restart starts nodes again (killing them first if they run), at once,
// on their ports, config and data.
func (c *Cluster) Restart(t testing.TB, nodes ...int) {
	t.Helper()
	began := time.Now()
	c.Kill(nodes...)
	for _, i := range nodes {
		// A server killed between writing an insert's part and committing
		// it in ZooKeeper finds the part unknown there, and 18.16 refuses
		// to start when too many are ("The local set of parts ... doesn't
		// look like the set of parts in ZooKeeper"). The flag is
		// ClickHouse's documented way out: it moves them to detached/,
		// and the loader's retry inserts those rows again.
		if err := c.Nodes[i].forceRestoreData(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.launch(nodes...); err != nil {
		t.Fatal(err)
	}
	t.Logf("chcluster: nodes %v restarted in %v", nodes, time.Since(began).Round(time.Millisecond))
}

// Add lists a standby node in every node's remote_servers, starts it, and
// waits until every running node's cluster includes it (servers reload
// remote_servers by themselves, within seconds).
func (c *Cluster) Add(t testing.TB, i int) {
	t.Helper()
	c.mu.Lock()
	c.member[i] = true
	c.mu.Unlock()
	if err := c.writeConfigs(); err != nil {
		t.Fatal(err)
	}
	if err := c.launch(i); err != nil {
		t.Fatal(err)
	}
	want := strconv.Itoa(len(c.Addrs())) + "\n"
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range c.Nodes {
		for n.running() {
			got, err := n.TryQuery("SELECT count() FROM system.clusters WHERE cluster = '" + c.Name + "'")
			if err == nil && got == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("chcluster: %s lists %q hosts in cluster %s after 30 s, want %q (err %v)", n.Addr, got, c.Name, want, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// stopAll stops every node at once.
func (c *Cluster) stopAll() {
	var wg sync.WaitGroup
	for _, n := range c.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.Stop()
		}()
	}
	wg.Wait()
}

// launch starts nodes in parallel.
func (c *Cluster) launch(nodes ...int) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for k, i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Nodes[i].launch(); err != nil {
				errs[k] = fmt.Errorf("node %d (shard %d replica %d): %w", i, c.Nodes[i].Shard, c.Nodes[i].Replica, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// launch starts a node and waits until it has a ZooKeeper session too:
// 18.16 answers /ping before it connects, and a distributed DDL query in
// that moment can crash it.
func (n *Node) launch() error {
	if err := n.Launch(); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := n.TryQuery("SELECT count() FROM system.zookeeper WHERE path = '/clickhouse'")
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s has no ZooKeeper session after 30 s: %w", n.Addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// forceRestoreData sets the flag that lets a replica start with parts
// ZooKeeper does not know; the server removes it once read.
func (n *Node) forceRestoreData() error {
	dir := filepath.Join(n.Dir, "data", "flags")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "force_restore_data"), nil, 0o644)
}

// running reports whether a node answers a query.
func (n *Node) running() bool {
	_, err := n.TryQuery("SELECT 1")
	return err == nil
}

// writeConfigs (re)writes config.d/cluster.xml of every node.
func (c *Cluster) writeConfigs() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var shards strings.Builder
	for s := 1; ; s++ {
		var replicas strings.Builder
		found := false
		for i, n := range c.Nodes {
			if n.Shard != s {
				continue
			}
			found = true
			if !c.member[i] {
				continue
			}
			host, port, err := net.SplitHostPort(n.Addr)
			if err != nil {
				return err
			}
			fmt.Fprintf(&replicas, "\n                <replica><host>%s</host><port>%s</port></replica>", host, port)
		}
		if !found {
			break
		}
		if replicas.Len() > 0 {
			fmt.Fprintf(&shards, "\n            <shard>\n                <internal_replication>true</internal_replication>%s\n            </shard>", replicas.String())
		}
	}
	zkHost, zkPort, err := net.SplitHostPort(c.ZooKeeper.Addr)
	if err != nil {
		return err
	}
	for _, n := range c.Nodes {
		xml := fmt.Sprintf(`<?xml version="1.0"?>
<yandex>
    <interserver_http_host>127.0.0.1</interserver_http_host>
    <interserver_http_port>%d</interserver_http_port>
    <zookeeper>
        <node><host>%s</host><port>%s</port></node>
        <session_timeout_ms>5000</session_timeout_ms>
    </zookeeper>
    <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
    <macros>
        <shard>%02d</shard>
        <replica>s%dr%d</replica>
    </macros>
    <remote_servers>
        <%s>%s
        </%s>
    </remote_servers>
</yandex>
`, n.InterserverPort, zkHost, zkPort, n.Shard, n.Shard, n.Replica, c.Name, shards.String(), c.Name)
		dir := filepath.Join(n.Dir, "config.d")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		// Renamed into place: a running server may reload it any time.
		tmp := filepath.Join(dir, ".cluster.xml.tmp")
		if err := os.WriteFile(tmp, []byte(xml), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(dir, "cluster.xml")); err != nil {
			return err
		}
	}
	return nil
}
