package clickhouse

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pagewatch/pagewatch/domain/traffic"
	"github.com/pagewatch/pagewatch/internal/sqlcheck"
	"github.com/pagewatch/pagewatch/internal/testserver/clickhousetest"
	"github.com/pagewatch/pagewatch/schema"
)

// The sweep's statements lean on FINAL, UTC day conversions and -If
// aggregates, whose behaviour could differ between 18.16 and the current
// engine where the syntax does not. So the same data goes through both
// and every answer must be the same, and right where it is easy to know.
func TestSweepStatementsAgreeOnEngines(t *testing.T) {
	stmts := sweepScenario(t)
	current := sqlcheck.Query(t, stmts)

	srv := clickhousetest.Start(t)
	for i, s := range stmts {
		if strings.HasPrefix(s.SQL, "USE ") {
			continue // HTTP has no session: csvQuery names the database
		}
		out, err := csvQuery(srv, s.SQL)
		if err != nil {
			t.Fatalf("%s on 18.16: %v\n%s", s.Name, err, s.SQL)
		}
		if out != current[i].Output {
			t.Errorf("%s: 18.16 says\n%s\nthe current engine says\n%s", s.Name, out, current[i].Output)
		}
	}
	for i, s := range stmts {
		if want, ok := sweepScenarioWants[s.Name]; ok && current[i].Output != want {
			t.Errorf("%s = %q, want %q", s.Name, current[i].Output, want)
		}
	}
}

// sweepScenarioWants are answers worked out by hand: 2,000 rows of hits
// 1 to 5 (sum 6,000) of which the first 500 are loaded twice, one every
// 97 s from 2025-03-24 07:06:40 UTC, 50 to a message.
var sweepScenarioWants = map[string]string{
	"days to seal":         "\"2025-03-24\",13,0\n\"2025-03-25\",19,0\n\"2025-03-26\",10,0\n",
	"days to seal, sealed": "",
	// All sealed days plus page_minutes from 2025-03-26 on: everything.
	"page_days total":     "6000\n",
	"all-time from seals": "6000\n",
	"window counts, sites and floor": "\"s1\",\"/p1\",287,68,192,197\n\"s1\",\"/p4\",290,72,194,200\n" +
		"\"s2\",\"/p2\",288,66,191,198\n",
}

func sweepScenario(t *testing.T) []sqlcheck.Statement {
	migrations, err := schema.Migrations(schema.Layout{})
	if err != nil {
		t.Fatal(err)
	}
	var stmts []sqlcheck.Statement
	add := func(name, sql string) { stmts = append(stmts, sqlcheck.Statement{Name: name, SQL: sql}) }
	add("database", "CREATE DATABASE IF NOT EXISTS sweep")
	add("use", "USE sweep")
	for _, m := range migrations {
		for i, s := range m.Statements {
			add(fmt.Sprintf("%s #%d", m.Name, i+1), s)
		}
	}
	rows := func(n int) string {
		return fmt.Sprintf(`SELECT concat('s', toString(number %% 3)), concat('/p', toString(number %% 7)),
    toDateTime(1742800000 + number * 97), intDiv(number, 50) + 1, 1 + number %% 5 FROM numbers(%d)`, n)
	}
	add("load", insertPageMinutes+" "+rows(2000))
	add("load again", insertPageMinutes+" "+rows(500))
	add("loaded days", insertLoadedDays+" SELECT DISTINCT toDate(minute, 'UTC'), seq FROM page_minutes")
	until := int64(1742947200) // 2025-03-26
	add("days to seal", bind(queryDaysToSeal, until+secondsPerDay, until+secondsPerDay))
	add("seal", bind(insertPageDays, until-2*secondsPerDay, until+secondsPerDay))
	add("record seals", insertSealedDays+" VALUES ('2025-03-24', 13), ('2025-03-25', 19), ('2025-03-26', 10)")
	add("days to seal, sealed", bind(queryDaysToSeal, until+secondsPerDay, until+secondsPerDay))
	add("page_days total", "SELECT sum(hits) FROM page_days FINAL")
	q := traffic.WindowQuery{
		Starts: []time.Time{{}, time.Unix(until, 0), time.Unix(until-secondsPerDay+3600, 0), time.Unix(1742860000, 0)},
		End:    time.Unix(until+secondsPerDay, 0), SealedBefore: time.Unix(until, 0),
	}
	add("window counts", "SELECT * FROM ("+bindWindowCounts(q)+") ORDER BY site, path")
	add("all-time from seals", "SELECT sum(n0) FROM ("+bindWindowCounts(q)+")")
	q.Sites, q.Floor = []string{"s1", "s2"}, 286
	add("window counts, sites and floor", "SELECT * FROM ("+bindWindowCounts(q)+") ORDER BY site, path")
	add("scan minutes", bind(queryScanMinutes, false, siteSet([]string{"s0"}), until-secondsPerDay, until))
	return stmts
}

// csvQuery runs sql on a test server in the format sqlcheck returns.
func csvQuery(srv *clickhousetest.Server, sql string) (string, error) {
	u := "http://" + srv.HTTPAddr + "/?default_format=CSV&database=" + url.QueryEscape(sweepDatabase(sql))
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Post(u, "text/plain", strings.NewReader(sql))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return string(body), nil
}

// sweepDatabase is where a scenario statement runs on 18.16: the default
// database until the scenario's own exists.
func sweepDatabase(sql string) string {
	if strings.HasPrefix(sql, "CREATE DATABASE") || strings.HasPrefix(sql, "USE ") {
		return "default"
	}
	return "sweep"
}
