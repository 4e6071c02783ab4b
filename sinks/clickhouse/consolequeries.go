package clickhouse

// The console's reads (console.go). Each is bounded by a time range and a
// LIMIT, and reads the table whose key or partitions that range narrows:
// raw hits (one partition per day) for the last hour and day, a page's
// own rows of page_minutes for its charts, page_hours (ordered by hour)
// for baselines.
const (
	// queryConsoleCrossings is the history: crossings in [from, to),
	// each filter ignored when its first ? is ''. The outcome filter
	// keeps crossings with that outcome among their notifications.
	queryConsoleCrossings = `SELECT crossing_key, rule, site, path, window_text, threshold, hits, crossed_at
FROM crossings FINAL
WHERE crossed_at >= toDateTime(?) AND crossed_at < toDateTime(?)
    AND (? = '' OR site = ?) AND (? = '' OR rule = ?) AND (? = '' OR path = ?)
    AND (? = '' OR crossing_key IN (
        SELECT crossing_key FROM notifications WHERE outcome = ? AND at >= toDateTime(?)))
ORDER BY crossed_at DESC, crossing_key DESC
LIMIT ?, ?`

	// queryConsoleOutcomes is what the workers (and operators, through
	// the console) did with some crossings.
	queryConsoleOutcomes = `SELECT crossing_key, at, outcome, smtp_code, error, worker
FROM notifications
WHERE crossing_key IN ?
ORDER BY at, outcome
LIMIT 10000`

	// queryConsoleWhys is why some crossings were made (the page chart
	// labels its episodes with them); a why is written once per key, and
	// any of its copies will do.
	queryConsoleWhys = `SELECT crossing_key, any(why)
FROM crossing_whys
WHERE crossing_key IN ?
GROUP BY crossing_key
LIMIT 10000`

	// queryConsoleActions is the operators' latest actions on dead
	// letters, kept in the notifications history as outcomes of their
	// own.
	queryConsoleActions = `SELECT at, crossing_key, rule, site, path, outcome, error, worker
FROM notifications
WHERE at >= toDateTime(?) AND outcome IN ('retried', 'discarded')
ORDER BY at DESC
LIMIT ?`

	// queryConsoleLastFired is when each page of some rules last crossed.
	queryConsoleLastFired = `SELECT rule, site, path, max(crossed_at) AS last
FROM crossings
WHERE rule IN ? AND crossed_at >= toDateTime(?)
GROUP BY rule, site, path
ORDER BY last DESC
LIMIT 10000`

	// queryConsoleLive is the last hour's busiest pages per site, with
	// their last 5 minutes and views per minute, from the raw hits (the
	// day's partition; page_minutes is partitioned by month). The inner
	// GROUP BY keeps one row per hit whether or not a batch loaded twice
	// has been merged away.
	queryConsoleLive = `SELECT site, path, sumIf(n, m >= toDateTime(?)) AS v5, sum(n) AS v60,
    groupArray(toUInt32(m)) AS ms, groupArray(n) AS ns
FROM (
    SELECT site, path, toStartOfMinute(ts) AS m, count() AS n
    FROM (
        SELECT site, path, ts
        FROM hits
        WHERE ts >= toDateTime(?) AND ts < toDateTime(?) AND (? OR site = ?)
        GROUP BY site, path, ts, seq, line_offset
    )
    GROUP BY site, path, m
)
GROUP BY site, path
ORDER BY v60 DESC, site, path
LIMIT ? BY site
LIMIT ?`

	// queryConsoleDayTotals is sealed views per page and day, read by
	// page_days' key (site, path, day); the largest of a page-day's rows
	// is its latest (see queryConsoleTopPagesDays).
	queryConsoleDayTotals = `SELECT site, path, day, max(hits)
FROM page_days
WHERE site IN ? AND path IN ? AND day >= toDate(toDateTime(?), 'UTC') AND day < toDate(toDateTime(?), 'UTC')
GROUP BY site, path, day
ORDER BY site, path, day`

	// queryConsoleSiteStart is a site's first minute with hits, read by
	// page_minutes' key (site first); 1970 when it has none.
	queryConsoleSiteStart = `SELECT min(minute) FROM page_minutes WHERE site = ?`

	// queryConsolePageHours is one page's views per hour, deduplicated
	// like queryPageSeries (one row per minute and batch).
	queryConsolePageHours = `SELECT toStartOfHour(minute) AS h, sum(n) FROM (
    SELECT minute, any(hits) AS n
    FROM page_minutes
    WHERE site = ? AND path = ? AND minute >= toDateTime(?) AND minute < toDateTime(?)
    GROUP BY minute, seq
)
GROUP BY h
ORDER BY h`

	// queryConsolePageCounts is some pages' views in a span, read by
	// page_minutes' key (site, path, minute) and deduplicated per
	// (minute, batch).
	queryConsolePageCounts = `SELECT site, path, sum(n) FROM (
    SELECT site, path, minute, any(hits) AS n
    FROM page_minutes
    WHERE site IN ? AND path IN ? AND minute >= toDateTime(?) AND minute < toDateTime(?)
    GROUP BY site, path, minute, seq
)
GROUP BY site, path`

	// queryConsolePageCountsSealed is queryConsolePageCounts over a span
	// longer than a day: the whole sealed days in it from page_days (by
	// key, one row per page-day), the minutes before and after them —
	// the ?s after the sets are the two minute spans, then the days.
	queryConsolePageCountsSealed = `SELECT site, path, sum(n) FROM (
    SELECT site, path, any(hits) AS n
    FROM page_minutes
    WHERE site IN ? AND path IN ?
        AND ((minute >= toDateTime(?) AND minute < toDateTime(?)) OR (minute >= toDateTime(?) AND minute < toDateTime(?)))
    GROUP BY site, path, minute, seq
    UNION ALL
    SELECT site, path, max(hits) AS n
    FROM page_days
    WHERE site IN ? AND path IN ? AND day >= toDate(toDateTime(?), 'UTC') AND day < toDate(toDateTime(?), 'UTC')
    GROUP BY site, path, day
)
GROUP BY site, path`

	// queryConsoleTopPagesRecent is a site's busiest pages in a span of
	// at most a day, from the raw hits.
	queryConsoleTopPagesRecent = `SELECT site, path, count() AS n
FROM (
    SELECT site, path
    FROM hits
    WHERE ts >= toDateTime(?) AND ts < toDateTime(?) AND (? OR site = ?)
    GROUP BY site, path, ts, seq, line_offset
)
GROUP BY site, path
ORDER BY n DESC, site, path
LIMIT ?`

	// queryConsoleTopPagesDays is a site's busiest pages over whole
	// sealed days.
	// A page-day's rows only gain hits with their version, so its
	// largest is its latest: max per day instead of FINAL, which 18.16
	// makes read whole parts.
	queryConsoleTopPagesDays = `SELECT site, path, sum(h) AS n FROM (
    SELECT site, path, day, max(hits) AS h
    FROM page_days
    WHERE day >= toDate(toDateTime(?), 'UTC') AND day < toDate(toDateTime(?), 'UTC') AND (? OR site = ?)
    GROUP BY site, path, day
)
GROUP BY site, path
ORDER BY n DESC, site, path
LIMIT ?`

	// queryConsoleLiveVisitors is the live view's pages' visitors in its
	// last 5 minutes (the first ?) and hour: distinct client keys among
	// their counted hits, from page_clients, read by its key (site, path,
	// minute). The sites and paths are those queryConsoleLive returned
	// (every pair of them: the caller keeps its own). A distinct count
	// needs no deduplication: a batch loaded twice adds no client.
	queryConsoleLiveVisitors = `SELECT site, path, uniqExactIf(client, minute >= toDateTime(?)) AS u5, uniqExact(client) AS u60
FROM page_clients
WHERE site IN ? AND path IN ? AND minute >= toDateTime(?) AND minute < toDateTime(?)
    AND counted = 1 AND client != 0
GROUP BY site, path
LIMIT 10000`

	// queryConsolePageVisitors is one page's visitors per step (the first
	// two ?, in seconds: 60 or 3600) in [from, to): distinct client keys
	// among its counted hits in each. Steps divide a UTC day, and keys
	// change each UTC day, so no step mixes two days' keys.
	queryConsolePageVisitors = `SELECT toDateTime(intDiv(toUInt32(minute), ?) * ?) AS b, uniqExact(client) AS u
FROM page_clients
WHERE site = ? AND path = ? AND minute >= toDateTime(?) AND minute < toDateTime(?)
    AND counted = 1 AND client != 0
GROUP BY b
ORDER BY b`

	// queryConsolePageClasses is one page's hits per client class in
	// [from, to), counted as views or not, with the distinct client keys
	// of each. Hits are deduplicated by page_clients' whole key first (a
	// batch loaded twice writes the same rows), distinct keys need not.
	queryConsolePageClasses = `SELECT class, counted, sum(h) AS n, uniqExactIf(client, client != 0) AS u FROM (
    SELECT class, counted, client, any(hits) AS h
    FROM page_clients
    WHERE site = ? AND path = ? AND minute >= toDateTime(?) AND minute < toDateTime(?)
    GROUP BY minute, seq, class, counted, client
)
GROUP BY class, counted
ORDER BY n DESC, class, counted`

	// queryConsoleFreshness is how far the loaded and sealed counts
	// reach; the raw hits are read only over the last two days.
	queryConsoleFreshness = `SELECT
    (SELECT max(ts) FROM hits WHERE ts >= toDateTime(?)) AS last_hit,
    (SELECT max(day) FROM sealed_days) AS sealed_day,
    (SELECT max(day) FROM sealed_hour_days) AS sealed_hours`
)
