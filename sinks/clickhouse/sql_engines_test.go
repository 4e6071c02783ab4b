package clickhouse

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/internal/sqlcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/schema"
)

// sampleRuns gives every statement in queries.go a runnable form: inserts
// with a VALUES row, queries with their ? bound to sample values the way
// the client binds them.
var sampleRuns = map[string]string{
	"queryAppliedMigrations": queryAppliedMigrations,
	"insertMigration":        insertMigration + " VALUES (1, '0001_init.sql', toDateTime(1700000000))",
	"insertHits":             insertHits + " VALUES (toDateTime(1700000000), 'example.com', '/p', '-', 7, 0)",
	"insertPageMinutes":      insertPageMinutes + " VALUES ('example.com', '/p', toDateTime(1700000000), 7, 3)",
	"queryPageCount":         bind(queryPageCount, "example.com", "/p", int64(1699990000)),
	"queryHitCount":          queryHitCount,
	"insertCrossing":         insertCrossing + " VALUES ('r.k.1', 'r', 'example.com', '/p', '1h', 10, 11, toDateTime(1700000000))",
	"insertCrossingWhy":      insertCrossingWhy + ` VALUES ('r.k.1', toDateTime(1700000000), '{"kind":"spike","count":11}')`,
	"insertNotification":     insertNotification + " VALUES (toDateTime(1700000000), 'r.k.1', 'r', 'example.com', '/p', 'sent', 0, '', 'w1')",
	// The hit inserted above is in partition 20231114, which these find
	// and drop.
	"queryHitsPartitionsBefore": bind(queryHitsPartitionsBefore, int64(1800000000)),
	"alterDropHitsPartition":    bind(alterDropHitsPartition, "20231114"),
	"queryPageSeries":           bind(queryPageSeries, "example.com", "/p", int64(1699990000), int64(1700010000)),
	"queryTopReferrers":         bind(queryTopReferrers, "example.com", "/p", int64(1699990000), int64(1700010000), 10),

	// The sweep's statements (sweepqueries.go), over the page-minute row
	// inserted above: its day 2023-11-14 is loaded, sealed and counted.
	"insertLoadedDays": insertLoadedDays + " VALUES ('2023-11-14', 7)",
	"queryDaysToSeal":  bind(queryDaysToSeal, int64(1800000000), int64(1800000000)),
	"insertPageDays":   bind(insertPageDays, int64(1699920000), int64(1700006400)),
	"insertSealedDays": insertSealedDays + " VALUES ('2023-11-14', 1)",
	// All time, a month, an hour in a partial day, and one after End.
	"queryWindowDays": bindWindowDays(sampleWindows, false),
	// A query asked once over sealed days alone (pages' trends): the
	// pages over its floor.
	"queryWindowDaysOnce": bindWindowDays(traffic.WindowQuery{Starts: []time.Time{time.Unix(1699833600, 0), time.Unix(1699920000, 0)},
		End: time.Unix(1700006400, 0), SealedBefore: time.Unix(1700100000, 0), Floor: 6, Once: true}, true),
	"queryWindowMinutes": bindWindowMinutes(sampleWindows),
	"querySealMark":      querySealMark,
	// Visitors (visitorqueries.go), over a page_clients row of the same
	// page and minute: one client, counted.
	"insertPageClients": insertPageClients + " VALUES ('example.com', '/p', toDateTime(1700000000), 7, 1, 1, 12345, 3)",
	"queryVisitorCounts": bindVisitorCounts(traffic.WindowQuery{Measure: traffic.Visitors, Sites: []string{"example.com", "o'ther"},
		Starts: []time.Time{{}, time.Unix(1699999000, 0), time.Unix(1800000000, 0)}, End: time.Unix(1700100000, 0), Floor: 0}),
	"querySpanVisitors": bindSpanVisitors(traffic.SpanQuery{Sites: []string{"example.com"}, Paths: []string{"/p", "o'ther"},
		Spans: []traffic.Span{{From: time.Unix(1699995600, 0), To: time.Unix(1699999200, 0)}, {From: time.Unix(1699999200, 0), To: time.Unix(1700002800, 0)}}}),
	"queryHourCounts": bindHourCounts(traffic.HourQuery{Sites: []string{"example.com"}, Paths: []string{"/p", "o'ther"},
		Spans: []traffic.Span{{From: time.Unix(1699995600, 0), To: time.Unix(1699999200, 0)}, {From: time.Unix(1699999200, 0), To: time.Unix(1700002800, 0)}}}, false),
	// The page_hours statements, over the same page-minute row: its day
	// is sealed per hour, then read from page_hours (the first span is
	// on the day before 2023-11-14, the second on it).
	"queryHourDaysToSeal":  bind(queryHourDaysToSeal, int64(1800000000), int64(1800000000)),
	"insertPageHours":      bind(insertPageHours, int64(1699920000), int64(1700006400)),
	"insertSealedHourDays": insertSealedHourDays + " VALUES ('2023-11-14', 1)",
	"queryHourCountsAll": bindHourCounts(traffic.HourQuery{Sites: []string{"example.com"}, AllPaths: true,
		Spans: []traffic.Span{{From: time.Unix(1699995600, 0), To: time.Unix(1699999200, 0)}}}, false),
	"queryHourCountsSealed": bindHourCounts(traffic.HourQuery{Sites: []string{"example.com"}, Paths: []string{"/p", "o'ther"},
		Spans:        []traffic.Span{{From: time.Unix(1699912800, 0), To: time.Unix(1699920000, 0)}, {From: time.Unix(1699995600, 0), To: time.Unix(1700002800, 0)}},
		SealedBefore: time.Unix(1700010000, 0)}, true),
	// A page's noise over two weeks of page_hours around the row sealed
	// above, every hour counting.
	"queryPageNoise": bindPageNoise(traffic.NoiseQuery{Sites: []string{"example.com", "o'ther"}, From: time.Unix(1699315200, 0), Weeks: 2, Every: 1,
		MinMedian: 0, MinHours: 1, TrimPercent: 10, Bias: 0.91}),
	"queryDataStarts":  queryDataStarts,
	"queryDataEnds":    bind(queryDataEnds, int64(1699990000), int64(1800000000)),
	"querySiteHours":   bind(querySiteHours, int64(1699990000), int64(1700010000)),
	"queryScanMinutes": bind(queryScanMinutes, true, ch.GroupSet{Value: []any{""}}, int64(1699990000), int64(1700010000)),

	// A crossing's why (explainqueries.go), over the rows inserted above.
	"queryExplainRank":     bind(queryExplainRank, uint64(3), "example.com", int64(1699990000), int64(1700010000)),
	"queryExplainBusiest":  bind(queryExplainBusiest, "example.com", "/p", int64(1699990000), int64(1700010000)),
	"queryExplainDomains":  bind(queryExplainDomains, int64(1700000000), "example.com", "/p", int64(1699390000), int64(1700010000), 10),
	"queryExplainReferred": bind(queryExplainReferred, int64(1700000000), "example.com", "/p", int64(1699390000), int64(1700010000)),
	"queryExplainClasses":  bind(queryExplainClasses, "example.com", "/p", int64(1699990000), int64(1700010000)),
	"queryExplainVisitors": bind(queryExplainVisitors, "example.com", "/p", int64(1699990000), int64(1700010000)),

	// The console's reads (consolequeries.go), over the rows above.
	"queryConsoleCrossings": bind(queryConsoleCrossings, int64(1699990000), int64(1700010000), "example.com", "example.com", "", "", "", "", "sent", "sent", int64(1699990000), 0, 50),
	"queryConsoleOutcomes":  bind(queryConsoleOutcomes, ch.GroupSet{Value: []any{"r.k.1", "o'ther"}}),
	"queryConsoleWhys":      bind(queryConsoleWhys, ch.GroupSet{Value: []any{"r.k.1", "o'ther"}}),
	"queryConsoleActions":   bind(queryConsoleActions, int64(1699990000), 50),
	"queryConsoleLastFired": bind(queryConsoleLastFired, ch.GroupSet{Value: []any{"r"}}, int64(1699990000)),
	"queryConsoleLive":      bind(queryConsoleLive, int64(1699999700), int64(1699996400), int64(1700000000), true, "", 50, 2000),
	"queryConsoleDayTotals": bind(queryConsoleDayTotals, ch.GroupSet{Value: []any{"example.com"}}, ch.GroupSet{Value: []any{"/p", "o'ther"}},
		int64(1699392000), int64(1700006400)),
	"queryConsolePageCounts": bind(queryConsolePageCounts, ch.GroupSet{Value: []any{"example.com"}}, ch.GroupSet{Value: []any{"/p", "o'ther"}},
		int64(1699990000), int64(1700010000)),
	"queryConsolePageCountsSealed": bind(queryConsolePageCountsSealed, ch.GroupSet{Value: []any{"example.com"}}, ch.GroupSet{Value: []any{"/p"}},
		int64(1699390000), int64(1699401600), int64(1699920000), int64(1700010000),
		ch.GroupSet{Value: []any{"example.com"}}, ch.GroupSet{Value: []any{"/p"}}, int64(1699401600), int64(1699920000)),
	"queryConsolePageHours":      bind(queryConsolePageHours, "example.com", "/p", int64(1699990000), int64(1700010000)),
	"queryConsoleSiteStart":      bind(queryConsoleSiteStart, "example.com"),
	"queryConsoleTopPagesRecent": bind(queryConsoleTopPagesRecent, int64(1699990000), int64(1700010000), false, "example.com", 500),
	"queryConsoleTopPagesDays":   bind(queryConsoleTopPagesDays, int64(1699390000), int64(1700010000), true, "", 500),
	"queryConsoleFreshness":      bind(queryConsoleFreshness, int64(1699990000)),
	"queryConsoleLiveVisitors": bind(queryConsoleLiveVisitors, int64(1699999700), ch.GroupSet{Value: []any{"example.com"}},
		ch.GroupSet{Value: []any{"/p", "o'ther"}}, int64(1699996400), int64(1700000000)),
	"queryConsolePageVisitors": bind(queryConsolePageVisitors, int64(3600), int64(3600), "example.com", "/p", int64(1699390000), int64(1700010000)),
	"queryConsolePageClasses":  bind(queryConsolePageClasses, "example.com", "/p", int64(1699390000), int64(1700010000)),
}

// sampleWindows are windows of the sample page-minute row and day.
var sampleWindows = traffic.WindowQuery{
	Sites:        []string{"example.com", "o'ther"},
	Starts:       []time.Time{{}, time.Unix(1698796800, 0), time.Unix(1699999000, 0), time.Unix(1800000000, 0)},
	End:          time.Unix(1700100000, 0),
	SealedBefore: time.Unix(1700006400, 0),
}

// bindWindowDays and bindWindowMinutes render the halves of
// WindowCounts as it would.
func bindWindowDays(q traffic.WindowQuery, having bool) string {
	p, err := planWindows(q)
	if err != nil {
		panic(err)
	}
	sql, args := windowDaysSQL(p, q.Sites, having, q.Floor)
	return bind(sql, args...)
}

func bindWindowMinutes(q traffic.WindowQuery) string {
	p, err := planWindows(q)
	if err != nil {
		panic(err)
	}
	sql, args, ok := windowMinutesSQL(p, q.Sites)
	if !ok {
		panic("no start reads a minute")
	}
	return bind(sql, args...)
}

// bindWindowCounts is what WindowCounts returns, as one statement: both
// halves added up per page, above the floor.
func bindWindowCounts(q traffic.WindowQuery) string {
	var sums, names []string
	for i := range q.Starts {
		sums = append(sums, fmt.Sprintf("sum(n%d) AS n%d", i, i))
		names = append(names, fmt.Sprintf("n%d", i))
	}
	return fmt.Sprintf("SELECT site, path, %s FROM (%s UNION ALL %s) GROUP BY site, path HAVING arrayExists(c -> c > %d, [%s])",
		strings.Join(sums, ", "), bindWindowDays(q, false), bindWindowMinutes(q), q.Floor, strings.Join(names, ", "))
}

// bindVisitorCounts renders queryVisitorCounts as WindowCounts would.
func bindVisitorCounts(q traffic.WindowQuery) string {
	sql, args := visitorCountsSQL(q)
	return bind(sql, args...)
}

// bindSpanVisitors renders querySpanVisitors as SpanVisitors would.
func bindSpanVisitors(q traffic.SpanQuery) string {
	sql, args := spanVisitorsSQL(q)
	return bind(sql, args...)
}

// bindHourCounts renders queryHourCounts (sealed: queryHourCountsSealed)
// as HourCounts would.
func bindHourCounts(q traffic.HourQuery, sealed bool) string {
	s, l := splitHourSpans(q)
	sql, args := hourCountsSQL(queryHourCounts, "minute", q, l)
	if sealed {
		sql, args = hourCountsSQL(queryHourCountsSealed, "hour", q, s)
	}
	return bind(sql, args...)
}

// bindPageNoise renders queryPageNoise for q.
func bindPageNoise(q traffic.NoiseQuery) string {
	sql, args := noiseSQL(q)
	return bind(sql, args...)
}

// bind substitutes ? placeholders with SQL literals.
func bind(sql string, args ...any) string {
	for _, a := range args {
		sql = strings.Replace(sql, "?", literal(a), 1)
	}
	return sql
}

// literal formats a bound value as the client does.
func literal(a any) string {
	switch v := a.(type) {
	case string:
		return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
	case bool:
		if v {
			return "1"
		}
		return "0"
	case ch.GroupSet:
		lits := make([]string, len(v.Value))
		for i, x := range v.Value {
			lits[i] = literal(x)
		}
		return "(" + strings.Join(lits, ", ") + ")"
	default:
		return fmt.Sprint(v)
	}
}

// statements lists, in order, every statement pagewatch sends to ClickHouse.
func statements(t *testing.T) []sqlcheck.Statement {
	t.Helper()
	migrations, err := schema.Migrations(schema.Layout{})
	if err != nil {
		t.Fatal(err)
	}
	bootstrap, err := schema.CreateMigrationsTable(schema.Layout{})
	if err != nil {
		t.Fatal(err)
	}
	stmts := []sqlcheck.Statement{{Name: "schema.CreateMigrationsTable", SQL: bootstrap}}
	for _, m := range migrations {
		for i, s := range m.Statements {
			stmts = append(stmts, sqlcheck.Statement{Name: fmt.Sprintf("schema %s #%d", m.Name, i+1), SQL: s})
		}
	}
	for _, name := range queryConstNames(t) {
		sql, ok := sampleRuns[name]
		if _, cluster := clusterRuns[name]; cluster && !ok {
			continue // needs a cluster: see cluster_test.go
		}
		if !ok {
			t.Errorf("queries.go declares %s but neither sampleRuns nor clusterRuns has a runnable form of it", name)
			continue
		}
		stmts = append(stmts, sqlcheck.Statement{Name: "clickhouse." + name, SQL: sql})
	}
	return stmts
}

// queryConstNames reads queries.go and sweepqueries.go so a new
// statement cannot skip the check.
func queryConstNames(t *testing.T) []string {
	var names []string
	for _, file := range []string{"queries.go", "sweepqueries.go", "explainqueries.go", "consolequeries.go", "visitorqueries.go"} {
		names = append(names, constNames(t, file)...)
	}
	return names
}

func constNames(t *testing.T, file string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, spec := range g.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					names = append(names, n.Name)
				}
			}
		}
	}
	return names
}

func TestEveryStatementRunsOnCurrentEngine(t *testing.T) {
	version := sqlcheck.Run(t, statements(t))
	t.Logf("checked on ClickHouse %s (chDB)", version)
}

func TestEveryStatementRunsOn1816(t *testing.T) {
	srv := clickhousetest.Start(t)
	version := srv.Query(t, "SELECT version()")
	for _, s := range statements(t) {
		srv.Query(t, s.SQL)
	}
	t.Logf("checked on ClickHouse %s", strings.TrimSpace(version))
}
