package clickhouse

import (
	"fmt"
	"regexp"
	"strings"

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
