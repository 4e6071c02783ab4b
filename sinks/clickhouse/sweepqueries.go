package clickhouse

// The statements of the sweeper's read side (days.go, window.go), kept
// apart from queries.go only for size; the SQL test reads both files.
// Days are UTC days throughout: the loader computes them in Go, so every
// conversion between a day and a time names 'UTC' rather than relying on
// the server's time zone. Times are bound as Unix seconds.
const (
	// insertLoadedDays records that a message's minutes of a day are in
	// page_minutes (see InsertHits).
	insertLoadedDays = `INSERT INTO loaded_days (day, seq)`

	// queryDaysToSeal lists the days before the day of a Unix time that
	// have more loaded messages than they were last sealed with (0: never),
	// oldest first. Both ? are that time. More, not just different: the
	// count only grows, and were loaded_days to lose rows, sealing again
	// could not mend it and would repeat at every sweep.
	queryDaysToSeal = `SELECT day, max(loaded) AS n, max(sealed) AS s FROM (
    SELECT day, uniqExact(seq) AS loaded, toUInt64(0) AS sealed
    FROM loaded_days
    WHERE day < toDate(toDateTime(?), 'UTC')
    GROUP BY day
    UNION ALL
    SELECT day, toUInt64(0) AS loaded, max(batches) AS sealed
    FROM sealed_days
    WHERE day < toDate(toDateTime(?), 'UTC')
    GROUP BY day
)
GROUP BY day
HAVING n > s
ORDER BY day`

	// insertPageDays seals the days in [from, to) (? are Unix times at
	// UTC midnights): each page-day's hits, read with FINAL like the sweep
	// (see below), and as version how many (minute, message) rows the sum
	// covers. A page-day only gains rows, so a higher version is a more
	// complete sum and an equal one the same sum.
	insertPageDays = `INSERT INTO page_days (site, path, day, hits, version)
SELECT site, path, toDate(minute, 'UTC') AS day, sum(hits), count()
FROM page_minutes FINAL
WHERE minute >= toDateTime(?) AND minute < toDateTime(?)
GROUP BY site, path, day`

	// insertSealedDays records that a day was sealed with a number of
	// messages, once its page_days rows are in.
	insertSealedDays = `INSERT INTO sealed_days (day, batches)`

	// queryHourDaysToSeal is queryDaysToSeal for page_hours: the days
	// whose hours are to be summed (again), by sealed_hour_days.
	queryHourDaysToSeal = `SELECT day, max(loaded) AS n, max(sealed) AS s FROM (
    SELECT day, uniqExact(seq) AS loaded, toUInt64(0) AS sealed
    FROM loaded_days
    WHERE day < toDate(toDateTime(?), 'UTC')
    GROUP BY day
    UNION ALL
    SELECT day, toUInt64(0) AS loaded, max(batches) AS sealed
    FROM sealed_hour_days
    WHERE day < toDate(toDateTime(?), 'UTC')
    GROUP BY day
)
GROUP BY day
HAVING n > s
ORDER BY day`

	// insertPageHours seals the hours in [from, to) (? are Unix times at
	// UTC midnights) as insertPageDays seals days: each page-hour's hits
	// and, as version, how many (minute, message) rows the sum covers.
	// The hour is computed on Unix seconds, free of any time zone.
	insertPageHours = `INSERT INTO page_hours (site, path, hour, hits, version)
SELECT site, path, toDateTime(intDiv(toUInt32(minute), 3600) * 3600) AS h, sum(hits), count()
FROM page_minutes FINAL
WHERE minute >= toDateTime(?) AND minute < toDateTime(?)
GROUP BY site, path, h`

	// insertSealedHourDays records that a day's hours were sealed with a
	// number of messages, once its page_hours rows are in.
	insertSealedHourDays = `INSERT INTO sealed_hour_days (day, batches)`
)

// Statements of the sweep itself (window.go). Both read with FINAL, which
// keeps one row per key (in page_days the one with the highest version),
// so counts are exact before merges as with the GROUP BY of the count
// queries in queries.go. On 18.16 it costs a third to a half of that
// GROUP BY over the same rows: it merges parts already sorted by the key
// instead of hashing two strings and two numbers per row.
const (
	// queryWindowDays and queryWindowMinutes are the two halves of
	// WindowCounts: sealed days from page_days, the rest from
	// page_minutes, each summed per page; WindowCounts adds them up and
	// keeps the pages above the floor (the days half is kept between
	// seals, see sealedcache.go). Both are formats with one column per
	// window start: a start's count is a column of its own, not an
	// element of an array, which the driver scans by reflection (a fifth
	// of a steady sweep's Go at 100k pages).
	//
	// queryWindowDays: %[1]s are the columns, each summing the days from
	// its start's first whole day (or 0). The ? bind the columns' days,
	// the day range, and the sites. %[2]s is empty, or for a query asked
	// once whose every day is sealed (WindowQuery.Once: pages' trends)
	// "HAVING nK > ?", nK its earliest start's column (each page's
	// largest) and ? the floor: the pages under it are not sent at all,
	// most of a million pages' 35 days.
	queryWindowDays = `SELECT site, path,
    %[1]s
FROM page_days FINAL
WHERE day >= toDate(toDateTime(?), 'UTC') AND day < toDate(toDateTime(?), 'UTC') AND (? OR site IN ?)
GROUP BY site, path%[2]s`

	// queryWindowMinutes: %[1]s are the columns, each summing its start's
	// minute ranges (or 0), %[2]s every range any start reads. The ? bind
	// the columns' ranges, the coarse minute range (which prunes
	// partitions and the key), the sites, and the ranges.
	queryWindowMinutes = `SELECT site, path,
    %[1]s
FROM page_minutes FINAL
WHERE minute >= toDateTime(?) AND minute < toDateTime(?) AND (? OR site IN ?)
    AND (%[2]s)
GROUP BY site, path`

	// querySealMark changes whenever a day is sealed, for the first time
	// or again (a seal records more messages than the last one of its
	// day): while it stays the same, page_days holds what it held.
	querySealMark = `SELECT count(), sum(b) FROM (SELECT day, max(batches) AS b FROM sealed_days GROUP BY day)`

	// queryHourCounts is a format: hourCountsSQL fills in the hour ranges
	// (%s, each "minute >= toDateTime(?) AND minute < toDateTime(?)").
	// Some pages' hits per whole UTC hour, for spike baselines; the hour
	// is computed on Unix seconds, so no server time zone is involved.
	// The ? bind the sites, "every path" and the paths, and the ranges.
	// queryHourCountsSealed is queryHourCounts over page_hours, for the
	// hours sealedTo covers (%s: "hour >= toDateTime(?) AND hour <
	// toDateTime(?)" ranges); FINAL keeps each page-hour's most complete
	// sum. The ? bind the sites, "every path" and the paths, and the ranges.
	queryHourCountsSealed = `SELECT site, path, toUInt32(hour) AS h, hits
FROM page_hours FINAL
WHERE site IN ? AND (? OR path IN ?) AND (%s)`

	// queryPageNoise is each page's own noise (traffic.NoiseQuery) over
	// whole weeks of page_hours: per hour of the week, its samples
	// (padded with 0 for the hours without hits) sorted, their median
	// and median absolute deviation, and the overdispersion they read;
	// per page, the mean of those, trimmed at each end. One row a page.
	// Only every Every-th hour is read.
	// An hour of the week whose median can reach the least asked has
	// half its samples (the upper middle one on) there: the others, most
	// of a site's pages' hours, are left before their arrays are made.
	queryPageNoise = `SELECT site, path, arraySum(kept) / length(kept) AS noise FROM (
    SELECT site, path, arraySort(groupArray(phi)) AS phis, intDiv(length(phis) * ?, 100) AS cut,
        arraySlice(phis, cut + 1, length(phis) - 2 * cut) AS kept
    FROM (
        SELECT site, path,
            arraySort(arrayConcat(raw, arrayMap(x -> 0., range(toUInt64(greatest(0, ? - toInt64(length(raw)))))))) AS xs,
            {median xs} AS m,
            arraySort(arrayMap(x -> abs(x - m), xs)) AS ds,
            {median ds} AS mad,
            greatest(0., ((1.4826 * mad) * (1.4826 * mad) * ? - m) / (m * m)) AS phi
        FROM (
            SELECT site, path, groupArray(toFloat64(hits)) AS raw
            FROM page_hours FINAL
            WHERE site IN ? AND hour >= toDateTime(?) AND hour < toDateTime(?) AND intDiv(toUInt32(hour) - ?, 3600) % ? = 0
            GROUP BY site, path, intDiv(toUInt32(hour) - ?, 3600) % 168
            HAVING countIf(hits >= ?) >= ?
        )
        WHERE m >= ?
    )
    GROUP BY site, path
    HAVING length(phis) >= ?
)`

	queryHourCounts = `SELECT site, path, toUInt32(intDiv(toUInt32(minute), 3600) * 3600) AS hour, sum(hits) AS n
FROM page_minutes FINAL
WHERE site IN ? AND (? OR path IN ?) AND (%s)
GROUP BY site, path, hour`

	// queryDataStarts is each site's first minute with hits: baselines do
	// not reach before it, where views are unknown rather than zero.
	queryDataStarts = `SELECT site, min(minute) FROM page_minutes GROUP BY site`

	// queryDataEnds is each site's newest minute with hits in [since,
	// until]: a site whose data is late has its drops held (no page "went
	// quiet" because its hits are not loaded yet). A minute past until is
	// a log line dated ahead (a clock that jumped, a forged line), which
	// would keep its site from ever looking late.
	queryDataEnds = `SELECT site, max(minute) FROM page_minutes WHERE minute >= toDateTime(?) AND minute <= toDateTime(?) GROUP BY site`

	// querySiteHours is, per site and UTC hour in [from, to), how many
	// of the hour's minutes had hits, and the hits (hours are counted
	// from the epoch, as queryHourCounts does, free of the server's time
	// zone).
	querySiteHours = `SELECT site, toUInt32(intDiv(toUInt32(minute), 3600) * 3600) AS hour, uniqExact(minute), sum(hits)
FROM page_minutes
WHERE minute >= toDateTime(?) AND minute < toDateTime(?)
GROUP BY site, hour`

	// queryScanMinutes returns per-minute counts of the pages of some
	// sites (the first ? true: every site) in [from, to), in key order.
	queryScanMinutes = `SELECT site, path, minute, sum(hits) AS n
FROM page_minutes FINAL
WHERE (? OR site IN ?) AND minute >= toDateTime(?) AND minute < toDateTime(?)
GROUP BY site, path, minute
ORDER BY site, path, minute`
)
