package grafana_test

import (
	"encoding/csv"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/internal/sqlcheck"
	"github.com/pagewatch/pagewatch/internal/testenv"
	"github.com/pagewatch/pagewatch/schema"
)

// The time range the panels' SQL is expanded for: one hour from t0, which
// is aligned to 5 minutes so the bucket arithmetic is easy to check.
const t0 = 1699999200

var (
	rangeFrom = time.Unix(t0, 0)
	rangeTo   = time.Unix(t0+3600, 0)
)

// seed is the data the queries read, in database pagewatch. The repeated
// page_minutes and crossings rows are a batch loaded twice and a crossing
// recorded twice: ReplacingMergeTree has not merged them, so the queries
// must count them once.
var seed = []string{
	`INSERT INTO pagewatch.page_minutes (site, path, minute, seq, hits) VALUES
    ('a.example', '/x', toDateTime(1699999260), 1, 5),
    ('a.example', '/x', toDateTime(1699999260), 1, 5),
    ('a.example', '/x', toDateTime(1699999320), 2, 3),
    ('a.example', '/y', toDateTime(1699999260), 1, 2),
    ('b.example', '/x', toDateTime(1699999800), 3, 4),
    ('a.example', '/x', toDateTime(1699999140), 0, 100),
    ('a.example', '/z', toDateTime(1700006400), 9, 50)`,
	`INSERT INTO pagewatch.crossings (crossing_key, rule, site, path, window_text, threshold, hits, crossed_at) VALUES
    ('r1.k1.1', 'r1', 'a.example', '/x', '1h', 5, 8, toDateTime(1699999500)),
    ('r1.k1.1', 'r1', 'a.example', '/x', '1h', 5, 8, toDateTime(1699999500)),
    ('r2.k2.1', 'r2', 'b.example', '/x', '10m', 3, 4, toDateTime(1700000100)),
    ('r1.k3.1', 'r1', 'a.example', '/old', '1h', 5, 9, toDateTime(1699998000))`,
}

// check is a query of the dashboard with its macros expanded, and what it
// must return on the seed data (nil: only that it runs).
type check struct {
	name, sql string
	want      [][]string
}

// expectations holds the results of panels by title, by interval. wrap,
// when set, selects from the panel's query, to turn DateTime columns (they
// print in the server's time zone) into Unix times.
var expectations = map[string]struct {
	wrap string
	want map[int][][]string // by $__interval_s
}{
	"Top pages, last hour": {want: map[int][][]string{
		60: {{"a.example", "/x", "8"}, {"b.example", "/x", "4"}, {"a.example", "/y", "2"}},
	}},
	"Hits per minute by site": {wrap: "SELECT toUInt32(t), site, hits_per_minute FROM (%s)", want: map[int][][]string{
		15:  {{"1699999260", "a.example", "7"}, {"1699999320", "a.example", "3"}, {"1699999800", "b.example", "4"}},
		60:  {{"1699999260", "a.example", "7"}, {"1699999320", "a.example", "3"}, {"1699999800", "b.example", "4"}},
		300: {{"1699999200", "a.example", "2"}, {"1699999800", "b.example", "0.8"}},
	}},
	"Recent crossings": {wrap: "SELECT toUInt32(at), rule, site, path, threshold, hits FROM (%s)", want: map[int][][]string{
		60: {{"1700000100", "r2", "b.example", "/x", "3", "4"}, {"1699999500", "r1", "a.example", "/x", "5", "8"}},
	}},
}

// dashboardChecks expands every ClickHouse query of the dashboard for
// rangeFrom..rangeTo at each interval its expectation names (60 s
// otherwise).
func dashboardChecks(t *testing.T) []check {
	t.Helper()
	d := loadDashboard(t)
	var out []check
	for _, p := range allPanels(d) {
		for _, tg := range p.Targets {
			if in, _ := inputOf(d, tg.Datasource); in != "DS_CLICKHOUSE" {
				continue
			}
			exp, ok := expectations[p.Title]
			intervals := []int{60}
			if ok {
				intervals = intervals[:0]
				for i := range exp.want {
					intervals = append(intervals, i)
				}
				slices.Sort(intervals)
			}
			for _, iv := range intervals {
				sql, err := expandMacros(tg.RawSQL, rangeFrom, rangeTo, iv)
				if err != nil {
					t.Errorf("panel %q %s: %v", p.Title, tg.RefID, err)
					continue
				}
				c := check{name: fmt.Sprintf("panel %q %s at interval %ds", p.Title, tg.RefID, iv), sql: sql}
				if ok {
					if exp.wrap != "" {
						c.sql = fmt.Sprintf(exp.wrap, sql)
					}
					c.want = exp.want[iv]
				}
				out = append(out, c)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("the dashboard has no ClickHouse query")
	}
	for title := range expectations {
		if !slices.ContainsFunc(out, func(c check) bool { return strings.Contains(c.name, strconv.Quote(title)) }) {
			t.Errorf("no ClickHouse panel titled %q", title)
		}
	}
	return out
}

var (
	macroWithArgs = regexp.MustCompile(`\$__(\w+)\(([^)]*)\)`)
	macroPlain    = regexp.MustCompile(`\$__(\w+)`)
)

// expandMacros does what Grafana and the ClickHouse plugin (v4,
// pkg/macros) do to a query before sending it: dashboard variables, then
// the time macros, which compare with toDateTime(unix seconds).
func expandMacros(sql string, from, to time.Time, intervalS int) (string, error) {
	sql = strings.NewReplacer("${database}", "pagewatch", "$database", "pagewatch").Replace(sql)
	dt := func(t time.Time) string { return fmt.Sprintf("toDateTime(%d)", t.Unix()) }
	var err error
	sql = macroWithArgs.ReplaceAllStringFunc(sql, func(m string) string {
		parts := macroWithArgs.FindStringSubmatch(m)
		col := strings.TrimSpace(parts[2])
		switch parts[1] {
		case "timeFilter":
			return fmt.Sprintf("%s >= %s AND %s <= %s", col, dt(from), col, dt(to))
		case "timeInterval":
			return fmt.Sprintf("toStartOfInterval(toDateTime(%s), INTERVAL %d second)", col, intervalS)
		}
		err = fmt.Errorf("macro %s is not expanded by this test", m)
		return m
	})
	sql = macroPlain.ReplaceAllStringFunc(sql, func(m string) string {
		switch m {
		case "$__fromTime":
			return dt(from)
		case "$__toTime":
			return dt(to)
		case "$__interval_s":
			return strconv.Itoa(intervalS)
		}
		err = fmt.Errorf("macro %s is not expanded by this test", m)
		return m
	})
	if err == nil && strings.Contains(sql, "$") {
		err = fmt.Errorf("unexpanded variable left in %s", sql)
	}
	return sql, err
}

// parseRows reads TabSeparated (18.16 over HTTP) or CSV (chDB) output.
func parseRows(t *testing.T, out string, isCSV bool) [][]string {
	t.Helper()
	if isCSV {
		rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if err != nil {
			t.Fatalf("parse CSV %q: %v", out, err)
		}
		return rows
	}
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line != "" {
			rows = append(rows, strings.Split(line, "\t"))
		}
	}
	return rows
}

func compare(t *testing.T, engine string, c check, got [][]string) {
	t.Helper()
	if c.want != nil && !slices.EqualFunc(got, c.want, slices.Equal) {
		t.Errorf("%s: %s returned %q, want %q\n%s", engine, c.name, got, c.want, c.sql)
	}
}

// TestClickHouseQueriesOn1816 runs every ClickHouse query of the dashboard
// on Debian's clickhouse-server 18.16 with pagewatch's schema applied.
func TestClickHouseQueriesOn1816(t *testing.T) {
	checks := dashboardChecks(t)
	_, srv := testenv.ClickHouse(t, testenv.Logger(t))
	for _, s := range seed {
		srv.Query(t, s)
	}
	for _, c := range checks {
		compare(t, "ClickHouse 18.16", c, parseRows(t, srv.Query(t, c.sql), false))
	}
	t.Logf("%d queries checked on ClickHouse %s", len(checks), strings.TrimSpace(srv.Query(t, "SELECT version()")))
}

// TestClickHouseQueriesOnCurrentEngine runs them on the current engine
// (chDB), on the same schema and data.
func TestClickHouseQueriesOnCurrentEngine(t *testing.T) {
	checks := dashboardChecks(t)
	stmts := []sqlcheck.Statement{{Name: "create database", SQL: "CREATE DATABASE pagewatch"}, {Name: "use", SQL: "USE pagewatch"}}
	bootstrap, err := schema.CreateMigrationsTable(schema.Layout{})
	if err != nil {
		t.Fatal(err)
	}
	stmts = append(stmts, sqlcheck.Statement{Name: "schema bootstrap", SQL: bootstrap})
	migrations, err := schema.Migrations(schema.Layout{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range migrations {
		for i, s := range m.Statements {
			stmts = append(stmts, sqlcheck.Statement{Name: fmt.Sprintf("schema %s #%d", m.Name, i+1), SQL: s})
		}
	}
	for i, s := range seed {
		stmts = append(stmts, sqlcheck.Statement{Name: fmt.Sprintf("seed #%d", i+1), SQL: s})
	}
	first := len(stmts)
	for _, c := range checks {
		stmts = append(stmts, sqlcheck.Statement{Name: c.name, SQL: c.sql})
	}
	results := sqlcheck.Query(t, stmts)
	for i, c := range checks {
		if r := results[first+i]; r.Err == "" {
			compare(t, "chDB", c, parseRows(t, r.Output, true))
		}
	}
}

func TestExpandMacros(t *testing.T) {
	got, err := expandMacros("SELECT $__interval_s FROM ${database}.t WHERE $__timeFilter( ts ) AND x < $__toTime",
		time.Unix(10, 0), time.Unix(20, 0), 30)
	want := "SELECT 30 FROM pagewatch.t WHERE ts >= toDateTime(10) AND ts <= toDateTime(20) AND x < toDateTime(20)"
	if err != nil || got != want {
		t.Errorf("expandMacros = %q, %v; want %q", got, err, want)
	}
	if _, err := expandMacros("SELECT $__unknown, $other", time.Unix(10, 0), time.Unix(20, 0), 30); err == nil {
		t.Error("expandMacros left unknown macros without an error")
	}
}
