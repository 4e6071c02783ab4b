package clickhouse

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pagewatch/pagewatch/schema"
)

// clusterRE is what remote_servers allows as a cluster name (an XML element
// name), restricted to what is safe inside backquotes and string literals.
var clusterRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,127}$`)

// validateCluster checks the cluster keys. The path and replica are only
// checked in cluster mode, where they are used.
func (c Config) validateCluster() []error {
	if c.Cluster == "" {
		return nil
	}
	var errs []error
	if !clusterRE.MatchString(c.Cluster) {
		errs = append(errs, fmt.Errorf("clickhouse.cluster: must be a cluster name of the servers' remote_servers (letters, digits, '_', '.', '-'), got %q", c.Cluster))
	}
	p := c.ReplicationPath
	switch {
	case !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/"):
		errs = append(errs, fmt.Errorf("clickhouse.replication_path: must start and not end with '/', got %q", p))
	case strings.ContainsAny(p, "'\\ \t\n"):
		errs = append(errs, fmt.Errorf("clickhouse.replication_path: must hold no quote, backslash or space, got %q", p))
	case !strings.Contains(p, "{table}"):
		errs = append(errs, fmt.Errorf("clickhouse.replication_path: must contain {table}, or all tables would share one path, got %q", p))
	case !strings.Contains(p, "{shard}"):
		errs = append(errs, fmt.Errorf("clickhouse.replication_path: must contain {shard}, or every shard would replicate the others' rows, got %q", p))
	}
	r := c.Replica
	switch {
	case strings.ContainsAny(r, "'\\ \t\n"):
		errs = append(errs, fmt.Errorf("clickhouse.replica: must hold no quote, backslash or space, got %q", r))
	case !strings.Contains(r, "{"):
		// ON CLUSTER runs one statement on every host, so a literal name
		// would be claimed by all of them.
		errs = append(errs, fmt.Errorf("clickhouse.replica: must contain a server macro such as {replica}, so that each host gets its own name, got %q", r))
	}
	return errs
}

// layout is how the schema is rendered for this configuration.
func (c Config) layout() schema.Layout {
	if c.Cluster == "" {
		return schema.Layout{}
	}
	return schema.Layout{
		Cluster:         c.Cluster,
		Database:        c.Database,
		ReplicationPath: c.ReplicationPath,
		Replica:         c.Replica,
	}
}

// Cluster-only statements. remote() takes its address list as a literal,
// so the list of every host is bound as one string.
const (
	// queryClusterHosts lists every replica of every shard.
	queryClusterHosts = `SELECT host_address, port FROM system.clusters WHERE cluster = ? ORDER BY shard_num, replica_num`

	// queryReplicationMark is, per replica of a table on the hosts bound
	// first, the server's time and the shard's replication log's last
	// index: what the replica must have pulled and fetched to hold every
	// part committed before now.
	queryReplicationMark = `SELECT replica_path, log_max_index, now()
FROM remote(?, system.replicas, ?, ?)
WHERE database = ? AND table = ?`

	// queryReplicasBehind counts the replicas of a table that have not
	// yet pulled the log up to their mark (bound as replica_path,
	// log_max_index pairs) or still have to fetch a part the log listed
	// before the mark's time.
	queryReplicasBehind = `SELECT count() FROM remote(?, system.replicas, ?, ?)
WHERE database = ? AND table = ?
  AND (log_pointer <= transform(replica_path, ?, ?, toUInt64(0))
    OR (inserts_in_queue > 0 AND inserts_oldest_time <= toDateTime(?)))`

	// queryTablesByHost is the tables of a database on the hosts bound.
	queryTablesByHost = `SELECT name FROM remote(?, system.tables, ?, ?) WHERE database = ?`
)

// clusterHosts is every host of the cluster as remote() takes them.
func (c *Client) clusterHosts(ctx context.Context) ([]string, error) {
	rows, err := c.conn.Query(ctx, queryClusterHosts, c.cfg.Cluster)
	if err != nil {
		return nil, fmt.Errorf("hosts of cluster %s: %w", c.cfg.Cluster, err)
	}
	defer rows.Close()
	var hosts []string
	for rows.Next() {
		var (
			host string
			port uint16
		)
		if err := rows.Scan(&host, &port); err != nil {
			return nil, fmt.Errorf("hosts of cluster %s: %w", c.cfg.Cluster, err)
		}
		hosts = append(hosts, net.JoinHostPort(host, strconv.Itoa(int(port))))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("hosts of cluster %s: %w", c.cfg.Cluster, err)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("cluster %s: no hosts in system.clusters of the server", c.cfg.Cluster)
	}
	return hosts, nil
}

// replicaPoll is how often awaitReplicas looks again.
const replicaPoll = 200 * time.Millisecond

// awaitReplicas returns once every replica of every shard of a local
// table (e.g. "page_minutes_local") holds every part committed before
// the call, or with ctx's error. A host that is down fails it: a
// replica that cannot be checked may come back behind and serve a read.
//
// The Distributed tables read one replica per shard, any of them, and
// the loader's inserts reach one replica, the others fetching the part
// a moment later (or, for a replica that was down, much later). Sealing
// a day needs every read to see the parts written before it (see
// SealDays), so in cluster mode it waits here first.
func (c *Client) awaitReplicas(ctx context.Context, table string) error {
	hosts, err := c.clusterHosts(ctx)
	if err != nil {
		return err
	}
	addrs := strings.Join(hosts, ",")
	user, password := c.cfg.Username, c.cfg.Password.Reveal()
	rows, err := c.conn.Query(ctx, queryReplicationMark, addrs, user, password, c.cfg.Database, table)
	if err != nil {
		return fmt.Errorf("replication of %s: %w", table, err)
	}
	var (
		paths   []string
		indexes []uint64
		mark    time.Time
	)
	for rows.Next() {
		var (
			path string
			idx  uint64
			at   time.Time
		)
		if err := rows.Scan(&path, &idx, &at); err != nil {
			rows.Close()
			return fmt.Errorf("replication of %s: %w", table, err)
		}
		paths, indexes = append(paths, path), append(indexes, idx)
		if mark.IsZero() || at.After(mark) {
			mark = at
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("replication of %s: %w", table, err)
	}
	if len(paths) == 0 {
		return nil // not replicated anywhere (one replica per shard, on plain engines): no lag
	}
	if len(paths) < len(hosts) {
		return fmt.Errorf("replication of %s: %d replicas on %d hosts; the table is missing somewhere (run migrate)", table, len(paths), len(hosts))
	}
	for {
		var behind uint64
		err := c.conn.QueryRow(ctx, queryReplicasBehind, addrs, user, password, c.cfg.Database, table, paths, indexes, mark.Unix()).Scan(&behind)
		if err != nil {
			return fmt.Errorf("replication of %s: %w", table, err)
		}
		if behind == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("replication of %s: %d replicas still behind: %w", table, behind, ctx.Err())
		case <-time.After(replicaPoll):
		}
	}
}

// tablesMissing reports whether a host of the cluster that answers lacks
// one of ours (tables) that another one has: a server added to the
// cluster after the migrations ran. Hosts that are down are skipped; they
// are checked the next time.
func (c *Client) tablesMissing(ctx context.Context, ours map[string]bool) (bool, error) {
	hosts, err := c.clusterHosts(ctx)
	if err != nil {
		return false, err
	}
	all := map[string]int{}
	answered := 0
	for _, h := range hosts {
		names, err := c.tablesOn(ctx, h)
		if err != nil {
			c.logger.Warn("cannot list the tables of a cluster host; checking it next time", "host", h, "err", err)
			continue
		}
		answered++
		for _, n := range names {
			if ours[n] {
				all[n]++
			}
		}
	}
	for _, n := range all {
		if n < answered {
			return true, nil
		}
	}
	return false, nil
}

func (c *Client) tablesOn(ctx context.Context, host string) ([]string, error) {
	rows, err := c.conn.Query(ctx, queryTablesByHost, host, c.cfg.Username, c.cfg.Password.Reveal(), c.cfg.Database)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}
