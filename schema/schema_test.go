package schema

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/cluster.sql from the current templates")

// testCluster is the layout the cluster tests render, with the default
// path and replica of the clickhouse config.
var testCluster = Layout{
	Cluster:         "pw",
	Database:        "pagewatch",
	ReplicationPath: "/clickhouse/tables/{shard}/{database}/{table}",
	Replica:         "{replica}",
}

func TestMigrationsParse(t *testing.T) {
	ms, err := Migrations(Layout{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || ms[0].Version != 1 {
		t.Fatalf("want migrations starting at 1, got %+v", ms)
	}
	if got := len(ms[0].Statements); got != 4 {
		t.Fatalf("0001 has %d statements, want 4", got)
	}
}

// dump lists every statement of a layout, bootstrap first, in the form of
// the files under testdata.
func dump(t *testing.T, l Layout) string {
	t.Helper()
	boot, err := CreateMigrationsTable(l)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := Migrations(l)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("-- bootstrap\n" + boot + ";\n\n")
	for _, m := range ms {
		for _, s := range m.Statements {
			b.WriteString("-- " + m.Name + "\n" + s + ";\n\n")
		}
	}
	return b.String()
}

// testdata/single_node.sql was written by the code before cluster mode
// existed and is never regenerated: one server must keep getting exactly
// that DDL, or existing databases would be migrated differently. A new
// migration's statements are appended to it by hand, once.
func TestSingleNodeDDLIsUnchanged(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "single_node.sql"))
	if err != nil {
		t.Fatal(err)
	}
	if got := dump(t, Layout{}); got != string(want) {
		t.Fatalf("single-node DDL changed:\n%s", got)
	}
	// The database is only written into statements in cluster mode.
	if got := dump(t, Layout{Database: "other"}); got != string(want) {
		t.Fatalf("single-node DDL depends on the database:\n%s", got)
	}
}

// testdata/cluster.sql shows the cluster DDL to readers and reviewers;
// `go test ./schema -run ClusterDDL -update` rewrites it after a deliberate change.
func TestClusterDDLGolden(t *testing.T) {
	got := dump(t, testCluster)
	path := filepath.Join("testdata", "cluster.sql")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("cluster DDL differs from %s (rerun with -update if intended):\n%s", path, got)
	}
}

func TestClusterDDLShape(t *testing.T) {
	boot, err := CreateMigrationsTable(testCluster)
	if err != nil {
		t.Fatal(err)
	}
	wantBoot := "CREATE TABLE IF NOT EXISTS pagewatch.schema_migrations ON CLUSTER `pw` (\n" +
		"    version UInt32,\n    name String,\n    applied_at DateTime\n" +
		") ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/shared/pagewatch/schema_migrations', '{shard}-{replica}')\n" +
		"ORDER BY version"
	if boot != wantBoot {
		t.Errorf("bootstrap:\n%s\nwant:\n%s", boot, wantBoot)
	}

	ms, err := Migrations(testCluster)
	if err != nil {
		t.Fatal(err)
	}
	// A page's rows stay on one shard (next to its minutes), and so do a
	// day's rows of the small per-day tables.
	wantKeys := map[string]string{
		"hits":             "cityHash64(site, path)",
		"page_minutes":     "cityHash64(site, path)",
		"crossings":        "cityHash64(crossing_key)",
		"notifications":    "cityHash64(crossing_key)",
		"loaded_days":      "cityHash64(day)",
		"page_days":        "cityHash64(site, path)",
		"sealed_days":      "cityHash64(day)",
		"crossing_whys":    "cityHash64(crossing_key)",
		"page_hours":       "cityHash64(site, path)",
		"sealed_hour_days": "cityHash64(day)",
		"page_clients":     "cityHash64(site, path)",
	}
	wantEngines := map[string]string{
		"hits":             "ReplicatedReplacingMergeTree",
		"page_minutes":     "ReplicatedReplacingMergeTree",
		"crossings":        "ReplicatedReplacingMergeTree",
		"notifications":    "ReplicatedMergeTree",
		"loaded_days":      "ReplicatedReplacingMergeTree",
		"page_days":        "ReplicatedReplacingMergeTree",
		"sealed_days":      "ReplicatedReplacingMergeTree",
		"crossing_whys":    "ReplicatedReplacingMergeTree",
		"page_hours":       "ReplicatedReplacingMergeTree",
		"sealed_hour_days": "ReplicatedReplacingMergeTree",
		"page_clients":     "ReplicatedReplacingMergeTree",
	}
	// The version column a ReplacingMergeTree keeps the highest of.
	wantVersions := map[string]string{"page_days": "version", "sealed_days": "batches", "page_hours": "version", "sealed_hour_days": "batches"}
	localRE := regexp.MustCompile("^CREATE TABLE IF NOT EXISTS pagewatch\\.(\\w+)_local ON CLUSTER `pw` \\(\n")
	engineRE := regexp.MustCompile(`\) ENGINE = (Replicated\w+)\('([^']*)', '([^']*)'(?:, (\w+))?\)\n`)
	distRE := regexp.MustCompile("^CREATE TABLE IF NOT EXISTS pagewatch\\.(\\w+) ON CLUSTER `pw` AS pagewatch\\.(\\w+)\nENGINE = Distributed\\('pw', 'pagewatch', '(\\w+)', (.+)\\)$")
	locals, dists := map[string]bool{}, map[string]bool{}
	for _, m := range ms {
		for i, s := range m.Statements {
			// Only the server's own macros may be left.
			if strings.ContainsAny(strings.NewReplacer("{shard}", "", "{replica}", "").Replace(s), "{}") {
				t.Errorf("%s #%d has an unexpanded macro or template action:\n%s", m.Name, i+1, s)
			}
			if lm := localRE.FindStringSubmatch(s); lm != nil {
				table := lm[1]
				locals[table] = true
				em := engineRE.FindStringSubmatch(s)
				if em == nil {
					t.Errorf("%s_local has no replicated engine:\n%s", table, s)
					continue
				}
				if em[1] != wantEngines[table] || em[2] != "/clickhouse/tables/{shard}/pagewatch/"+table+"_local" || em[3] != "{replica}" || em[4] != wantVersions[table] {
					t.Errorf("%s_local engine %s(%q, %q, %q)", table, em[1], em[2], em[3], em[4])
				}
				continue
			}
			if dm := distRE.FindStringSubmatch(s); dm != nil {
				table := dm[1]
				dists[table] = true
				if dm[2] != table+"_local" || dm[3] != table+"_local" || dm[4] != wantKeys[table] {
					t.Errorf("Distributed %s: AS %s, over %s, key %s", table, dm[2], dm[3], dm[4])
				}
				if !locals[table] {
					t.Errorf("Distributed %s created before %s_local", table, table)
				}
				continue
			}
			t.Errorf("%s #%d is neither a _local table ON CLUSTER nor a Distributed one:\n%s", m.Name, i+1, s)
		}
	}
	for table := range wantKeys {
		if !locals[table] || !dists[table] {
			t.Errorf("table %s: local %v, distributed %v", table, locals[table], dists[table])
		}
	}
}

func TestRenderRefusesHalfATable(t *testing.T) {
	_, err := newRenderer(Layout{}).render("x.sql", `CREATE TABLE IF NOT EXISTS {{table "t"}} (a UInt8) ENGINE = {{engine "t" "MergeTree()"}} ORDER BY a;`)
	if err == nil || !strings.Contains(err.Error(), "[t]") {
		t.Fatalf("a table without {{distributed}}: %v", err)
	}
	_, err = newRenderer(testCluster).render("x.sql", `{{engine "t" "Log"}}`)
	if err == nil || !strings.Contains(err.Error(), "MergeTree-family") {
		t.Fatalf("a non-MergeTree engine: %v", err)
	}
}

func TestReplicatedEngineKeepsArguments(t *testing.T) {
	got, err := newRenderer(testCluster).engine("t", "ReplacingMergeTree(ver)")
	want := "ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/pagewatch/t_local', '{replica}', ver)"
	if err != nil || got != want {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
}

func TestLayoutCheck(t *testing.T) {
	bad := []Layout{
		{Cluster: "pw;DROP", Database: "pagewatch", ReplicationPath: "/p/{table}", Replica: "{replica}"},
		{Cluster: "pw", Database: "page-watch", ReplicationPath: "/p/{table}", Replica: "{replica}"},
		{Cluster: "pw", Database: "pagewatch", ReplicationPath: "/p/{table}'", Replica: "{replica}"},
		{Cluster: "pw", Database: "pagewatch", ReplicationPath: "/p/{shard}", Replica: "{replica}"},
		{Cluster: "pw", Database: "pagewatch", ReplicationPath: "/p/{table}", Replica: ""},
	}
	for _, l := range bad {
		if _, err := Migrations(l); err == nil {
			t.Errorf("%+v: rendered", l)
		}
	}
}

func TestSplit(t *testing.T) {
	got := Split("-- c\nSELECT 1;\n\nSELECT\n  2;\nSELECT 3")
	want := []string{"SELECT 1", "SELECT\n  2", "SELECT 3"}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("stmt %d: got %q want %q", i, got[i], want[i])
		}
	}
}
