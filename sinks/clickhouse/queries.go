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

	// insertCrossingWhy records a crossing's why, as JSON, next to it.
	insertCrossingWhy = `INSERT INTO crossing_whys (crossing_key, crossed_at, why)`

	insertNotification = `INSERT INTO notifications (at, crossing_key, rule, site, path, outcome, smtp_code, error, worker)`

	// queryHitsPartitionsBefore lists the days of raw hits older than the
	// day of a Unix time (in the server's time zone, like the partition
	// key toYYYYMMDD(ts)). Partition ids of that key are YYYYMMDD, so they
	// compare as strings.
	queryHitsPartitionsBefore = `SELECT DISTINCT partition_id
FROM system.parts
WHERE database = currentDatabase() AND table = 'hits' AND active
    AND partition_id < toString(toYYYYMMDD(toDateTime(?)))
ORDER BY partition_id`

	// queryHitsPartitionsBeforeOnCluster is the cluster form: the rows
	// are in hits_local on every shard, and a shard may hold a day that
	// this server's shard does not. Its ? are the cluster, the database
	// and the Unix time.
	queryHitsPartitionsBeforeOnCluster = `SELECT DISTINCT partition_id
FROM cluster(?, system.parts)
WHERE database = ? AND table = 'hits_local' AND active
    AND partition_id < toString(toYYYYMMDD(toDateTime(?)))
ORDER BY partition_id`

	// alterDropHitsPartition drops one day of raw hits; ? is its
	// partition id. Dropping a partition that is already gone (another
	// loader was first) succeeds and changes nothing, on 18.16 as on
	// current servers (TestDropHitsBeforeTwice).
	alterDropHitsPartition = `ALTER TABLE hits DROP PARTITION ID ?`

	// alterDropHitsPartitionOnCluster is alterDropHitsPartition in cluster
	// mode, formatted with the database and the cluster. The database is
	// named because ON CLUSTER runs the statement on each host in that
	// host's default database. On Replicated tables one replica per shard
	// runs it and replication drops the partition on the others.
	alterDropHitsPartitionOnCluster = "ALTER TABLE %s.hits_local ON CLUSTER `%s` DROP PARTITION ID ?"
)

// Statements for the notification email (stats.go).
const (
	// queryPageSeries returns one page's hits per minute for minutes
	// starting in [from, to), deduplicated like queryPageCount: one row
	// per (minute, batch) before summing. Minutes without hits are absent.
	queryPageSeries = `SELECT minute, sum(h) AS n FROM (
    SELECT minute, any(hits) AS h
    FROM page_minutes
    WHERE site = ? AND path = ? AND minute >= toDateTime(?) AND minute < toDateTime(?)
    GROUP BY minute, seq
)
GROUP BY minute
ORDER BY minute`

	// queryTopReferrers counts one page's hits in [from, to) per referer
	// from the raw hits. The inner GROUP BY keeps one row per hit
	// (seq, line_offset), so a batch loaded twice counts once before and
	// after merges. No referer ("-" in the log, or empty) is left out.
	// The last ? is the LIMIT.
	queryTopReferrers = `SELECT referer, count() AS n FROM (
    SELECT referer
    FROM hits
    WHERE site = ? AND path = ? AND ts >= toDateTime(?) AND ts < toDateTime(?)
        AND referer != '' AND referer != '-'
    GROUP BY referer, seq, line_offset
)
GROUP BY referer
ORDER BY n DESC, referer
LIMIT ?`
)
