package clickhouse

// Every statement the package sends, in one place, so the SQL test can run
// each on ClickHouse 18.16 and on the current engine. Inserts name their
// columns: 18.16 sends a 0-column header otherwise.
const (
	queryAppliedMigrations = `SELECT version FROM schema_migrations`
	insertMigration        = `INSERT INTO schema_migrations (version, name, applied_at)`

	insertHits = `INSERT INTO hits (ts, site, path, referer, seq, line_offset)`

	insertPageMinutes = `INSERT INTO page_minutes (site, path, minute, seq, hits)`

	// queryPageCount counts one page's hits since a time. The inner GROUP BY
	// takes one row per (minute, batch) whatever merges have or have not
	// happened, which keeps the count exact when a batch was loaded twice.
	queryPageCount = `SELECT sum(h) FROM (
    SELECT any(hits) AS h
    FROM page_minutes
    WHERE site = ? AND path = ? AND minute >= toDateTime(?)
    GROUP BY minute, seq
)`

	// queryHitCount counts distinct hits, for tests and operators checking
	// that lines in equal rows out.
	queryHitCount = `SELECT count() FROM (SELECT seq, line_offset FROM hits GROUP BY seq, line_offset)`

	insertCrossing = `INSERT INTO crossings (crossing_key, rule, site, path, window_text, threshold, hits, crossed_at)`

	insertNotification = `INSERT INTO notifications (at, crossing_key, rule, site, path, outcome, smtp_code, error, worker)`
)
