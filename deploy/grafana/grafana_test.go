package grafana_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pagewatch/pagewatch/internal/metricsdoc"
	"github.com/pagewatch/pagewatch/internal/promql"
)

const dashboardPath = "pagewatch.json"

// The import inputs every panel's datasource comes down to.
var inputs = map[string]string{ // input name -> plugin id
	"DS_PROMETHEUS": "prometheus",
	"DS_CLICKHOUSE": "grafana-clickhouse-datasource",
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type target struct {
	RefID      string         `json:"refId"`
	Datasource *datasourceRef `json:"datasource"`
	Expr       string         `json:"expr"`
	RawSQL     string         `json:"rawSql"`
	EditorType string         `json:"editorType"`
	Format     *int           `json:"format"`
}

type panel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	Datasource *datasourceRef `json:"datasource"`
	Targets    []target       `json:"targets"`
	GridPos    struct{ H, W, X, Y int }
	Panels     []panel `json:"panels"` // of a collapsed row
}

type variable struct {
	Type       string          `json:"type"`
	Name       string          `json:"name"`
	Query      json.RawMessage `json:"query"`
	Datasource *datasourceRef  `json:"datasource"`
	Current    struct {
		Value any `json:"value"`
	} `json:"current"`
}

type dashboard struct {
	Inputs []struct {
		Name, Type, PluginID string
	} `json:"__inputs"`
	Requires []struct {
		Type, ID string
	} `json:"__requires"`
	SchemaVersion int    `json:"schemaVersion"`
	UID           string `json:"uid"`
	Title         string `json:"title"`
	Panels        []panel
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	return d
}

// allPanels flattens rows.
func allPanels(d dashboard) []panel {
	var out []panel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

// inputOf resolves a panel or target datasource to the import input it
// stands for: "${DS_X}" directly, or "${var}" of a datasource variable
// whose default is "${DS_X}".
func inputOf(d dashboard, ds *datasourceRef) (string, error) {
	if ds == nil {
		return "", fmt.Errorf("no datasource")
	}
	name := strings.TrimSuffix(strings.TrimPrefix(ds.UID, "${"), "}")
	if _, ok := inputs[name]; !ok {
		for _, v := range d.Templating.List {
			if v.Type == "datasource" && v.Name == name {
				cur, _ := v.Current.Value.(string)
				name = strings.TrimSuffix(strings.TrimPrefix(cur, "${"), "}")
				if want := inputs[name]; want != "" && string(v.Query) != `"`+want+`"` {
					return "", fmt.Errorf("variable %s lists %s datasources but defaults to input %s", v.Name, v.Query, name)
				}
			}
		}
	}
	plugin, ok := inputs[name]
	if !ok {
		return "", fmt.Errorf("datasource uid %q is neither an input nor a datasource variable defaulting to one", ds.UID)
	}
	if ds.Type != plugin {
		return "", fmt.Errorf("datasource type %q, want %q for %s", ds.Type, plugin, name)
	}
	return name, nil
}

func TestDashboardStructure(t *testing.T) {
	d := loadDashboard(t)
	if d.SchemaVersion < 36 || d.SchemaVersion > 41 {
		t.Errorf("schemaVersion %d, want about 39", d.SchemaVersion)
	}
	if d.UID == "" || d.Title == "" {
		t.Error("dashboard needs a uid and a title")
	}
	got := map[string]string{}
	for _, in := range d.Inputs {
		if in.Type != "datasource" {
			t.Errorf("input %s has type %q, want datasource", in.Name, in.Type)
		}
		got[in.Name] = in.PluginID
	}
	for name, plugin := range inputs {
		if got[name] != plugin {
			t.Errorf("__inputs: %s has plugin %q, want %q", name, got[name], plugin)
		}
	}
	required := map[string]bool{}
	for _, r := range d.Requires {
		required[r.Type+" "+r.ID] = true
	}
	for _, plugin := range inputs {
		if !required["datasource "+plugin] {
			t.Errorf("__requires lacks datasource %s", plugin)
		}
	}
	ids := map[int]string{}
	for _, p := range allPanels(d) {
		if prev, ok := ids[p.ID]; ok || p.ID == 0 {
			t.Errorf("panel %q: id %d missing or shared with %q", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: bad gridPos %+v", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if !required["panel "+p.Type] {
			t.Errorf("panel %q: type %s not in __requires", p.Title, p.Type)
		}
		in, err := inputOf(d, p.Datasource)
		if err != nil {
			t.Errorf("panel %q: %v", p.Title, err)
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: refId %q missing or repeated", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
			if tin, err := inputOf(d, tg.Datasource); err != nil || tin != in {
				t.Errorf("panel %q %s: query datasource %v (%v), want the panel's %s", p.Title, tg.RefID, tg.Datasource, err, in)
			}
			switch in {
			case "DS_PROMETHEUS":
				if tg.Expr == "" {
					t.Errorf("panel %q %s: Prometheus query without expr", p.Title, tg.RefID)
				}
			case "DS_CLICKHOUSE":
				if tg.RawSQL == "" || tg.EditorType != "sql" || tg.Format == nil || (*tg.Format != 0 && *tg.Format != 1) {
					t.Errorf("panel %q %s: ClickHouse query needs rawSql, editorType sql and format 0 (time series) or 1 (table)", p.Title, tg.RefID)
				}
			}
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			if _, err := inputOf(d, v.Datasource); err != nil {
				t.Errorf("variable %s: %v", v.Name, err)
			}
		}
	}
}

// promExprs lists every PromQL expression of the dashboard, named for
// error messages.
func promExprs(t *testing.T, d dashboard) map[string]string {
	out := map[string]string{}
	for _, p := range allPanels(d) {
		for _, tg := range p.Targets {
			if in, _ := inputOf(d, tg.Datasource); in == "DS_PROMETHEUS" {
				out[fmt.Sprintf("panel %q %s", p.Title, tg.RefID)] = tg.Expr
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no Prometheus queries found")
	}
	return out
}

func TestDashboardMetricsAreDocumented(t *testing.T) {
	d := loadDashboard(t)
	doc, err := metricsdoc.Read("../metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for where, expr := range promExprs(t, d) {
		names := promql.MetricNames(expr)
		if len(names) == 0 {
			t.Errorf("%s: no metric found in %q", where, expr)
		}
		for _, n := range names {
			if !doc.Serves(n, "up") {
				t.Errorf("%s: metric %s is not in deploy/metrics.md (expr %q)", where, n, expr)
			}
			used[strings.TrimSuffix(n, "_bucket")] = true
		}
	}
	// What the dashboard is for: none of these may drop out unnoticed.
	for _, m := range []string{
		"pagewatch_ingest_tail_lines_total", "pagewatch_ingest_tail_lag_bytes",
		"pagewatch_ingest_tail_oldest_unpublished_age_seconds", "pagewatch_ingest_load_rows_total",
		"pagewatch_ingest_load_consumer_pending_messages", "pagewatch_ingest_load_consumer_ack_pending_messages",
		"pagewatch_ingest_load_insert_duration_seconds", "pagewatch_sweeper_sweep_duration_seconds",
		"pagewatch_sweeper_crossings_total", "pagewatch_sweeper_leader", "pagewatch_worker_jobs_total",
		"pagewatch_worker_lock_conflicts_total", "pagewatch_ratelimit_wait_seconds",
		"pagewatch_ingest_load_dead_letters_total",
	} {
		if !used[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
}

// promVars are the values Grafana gives its variables when the exprs run.
var promVars = map[string]string{
	"__rate_interval": "5m", "__interval": "1m", "__range": "1h",
	"job": ".*", "instance": ".*",
}

var grafanaVar = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)`)

// TestDashboardPromQLParses runs every expression, with its variables
// substituted, through promtool check rules: Prometheus' own parser.
func TestDashboardPromQLParses(t *testing.T) {
	promtool := promql.Promtool(t)
	d := loadDashboard(t)
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	i := 0
	for where, expr := range promExprs(t, d) {
		expanded := grafanaVar.ReplaceAllStringFunc(expr, func(v string) string {
			m := grafanaVar.FindStringSubmatch(v)
			name := m[1] + m[2]
			val, ok := promVars[name]
			if !ok {
				t.Errorf("%s: unknown variable %s", where, v)
			}
			return val
		})
		q, _ := json.Marshal(expanded) // a JSON string is a YAML string
		i++
		fmt.Fprintf(&b, "      # %s\n      - record: dashboard:expr_%d\n        expr: %s\n", where, i, q)
	}
	path := filepath.Join(t.TempDir(), "dashboard_rules.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput()
	if err != nil {
		t.Errorf("promtool check rules on the dashboard's expressions: %v\n%s\n%s", err, out, b.String())
	}
}
