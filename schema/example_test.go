package schema_test

import (
	"fmt"

	"github.com/pagewatch/pagewatch/schema"
)

// Rendering the DDL for a cluster named "pw" in remote_servers: each table
// becomes a Replicated _local table on every shard plus a Distributed
// table under the plain name, all created ON CLUSTER. The servers expand
// {shard} and {replica} from their <macros>.
func ExampleMigrations_cluster() {
	migrations, err := schema.Migrations(schema.Layout{
		Cluster:         "pw",
		Database:        "pagewatch",
		ReplicationPath: "/clickhouse/tables/{shard}/{database}/{table}",
		Replica:         "{replica}",
	})
	if err != nil {
		panic(err)
	}
	for _, stmt := range migrations[0].Statements[:2] {
		fmt.Println(stmt + ";")
	}
	// Output:
	// CREATE TABLE IF NOT EXISTS pagewatch.hits_local ON CLUSTER `pw` (
	//     ts DateTime,
	//     site String,
	//     path String,
	//     referer String,
	//     seq UInt64,
	//     line_offset UInt64
	// ) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/pagewatch/hits_local', '{replica}')
	// PARTITION BY toYYYYMMDD(ts)
	// ORDER BY (site, path, ts, seq, line_offset);
	// CREATE TABLE IF NOT EXISTS pagewatch.hits ON CLUSTER `pw` AS pagewatch.hits_local
	// ENGINE = Distributed('pw', 'pagewatch', 'hits_local', cityHash64(site, path));
}
