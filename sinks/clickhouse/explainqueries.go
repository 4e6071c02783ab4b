package clickhouse

// The statements behind a crossing's why (explain.go), kept apart from
// queries.go only for size; the SQL test reads this file too. Times are
// bound as Unix seconds. page_minutes is read with FINAL like the sweep,
// raw hits grouped by (seq, line_offset) like queryTopReferrers: both
// count a batch loaded twice once, before and after merges.
const (
	// queryExplainRank ranks a page on its site in [from, to): the first
	// ? is the page's count, the rest the site and the range. It returns
	// one more than the pages with more views, and how many had views.
	queryExplainRank = `SELECT toUInt64(countIf(n > ?) + 1) AS page_rank, toUInt64(count()) AS pages FROM (
    SELECT path, sum(hits) AS n
    FROM page_minutes FINAL
    WHERE site = ? AND minute >= toDateTime(?) AND minute < toDateTime(?)
    GROUP BY path
)`

	// queryExplainBusiest is one page's minute with the most views in
	// [from, to), the earliest of equals.
	queryExplainBusiest = `SELECT minute, sum(hits) AS n
FROM page_minutes FINAL
WHERE site = ? AND path = ? AND minute >= toDateTime(?) AND minute < toDateTime(?)
GROUP BY minute
ORDER BY n DESC, minute
LIMIT 1`

	// queryExplainDomains counts one page's hits per referrer domain (the
	// host without "www.") in the window, [the second ?, the third), and
	// in the baseline period before it, [the first ?, the second): the ?
	// bind the window start, the site, the path, the period's start, the
	// window end, and the LIMIT. Referers that are not URLs have no
	// domain and are left out, like hits without a referer.
	queryExplainDomains = `SELECT d, toUInt64(countIf(w = 1)) AS win, toUInt64(countIf(w = 0)) AS base FROM (
    SELECT domainWithoutWWW(referer) AS d, any(ts) >= toDateTime(?) AS w
    FROM hits
    WHERE site = ? AND path = ? AND ts >= toDateTime(?) AND ts < toDateTime(?)
        AND referer != '' AND referer != '-'
    GROUP BY referer, seq, line_offset
)
WHERE d != ''
GROUP BY d
HAVING win > 0
ORDER BY win DESC, d
LIMIT ?`

	// queryExplainReferred is the denominators of the domains' shares:
	// the hits with a referrer domain in the window and in the period
	// before it, bound like queryExplainDomains without the LIMIT.
	queryExplainReferred = `SELECT toUInt64(countIf(w = 1)) AS win, toUInt64(countIf(w = 0)) AS base FROM (
    SELECT domainWithoutWWW(referer) AS d, any(ts) >= toDateTime(?) AS w
    FROM hits
    WHERE site = ? AND path = ? AND ts >= toDateTime(?) AND ts < toDateTime(?)
        AND referer != '' AND referer != '-'
    GROUP BY referer, seq, line_offset
)
WHERE d != ''`
)

// The statements of a crossing's clients part (Explanation.Clients) and
// of the sweep's client guard, over one page's page_clients rows in
// [from, to): the ? bind the site, the path and the range. A batch
// loaded twice writes identical rows, which only a merge makes one: the
// inner GROUP BY the whole key, with any(hits), counts each once before
// and after merges (FINAL would too, but costs a merge of the page's
// parts on 18.16).
const (
	// queryExplainClasses is the page's hits per class and counted,
	// with those of them that carry a client key.
	queryExplainClasses = `SELECT class, counted, toUInt64(sum(h)) AS n, toUInt64(sumIf(h, client != 0)) AS keyed FROM (
    SELECT class, counted, client, any(hits) AS h
    FROM page_clients
    WHERE site = ? AND path = ? AND minute >= toDateTime(?) AND minute < toDateTime(?)
    GROUP BY minute, seq, class, counted, client
)
GROUP BY class, counted
ORDER BY n DESC, class, counted`

	// queryExplainVisitors is the distinct client keys among the page's
	// views, and the views of the busiest of them (0 and 0 with none),
	// and of the 3 busiest (traffic.FewClients), most first.
	queryExplainVisitors = `SELECT toUInt64(count()) AS visitors, toUInt64(max(n)) AS top,
    arraySlice(arrayReverseSort(groupArray(n)), 1, 3) AS busiest FROM (
    SELECT client, sum(h) AS n FROM (
        SELECT client, any(hits) AS h
        FROM page_clients
        WHERE site = ? AND path = ? AND minute >= toDateTime(?) AND minute < toDateTime(?)
            AND counted = 1 AND client != 0
        GROUP BY minute, seq, class, counted, client
    )
    GROUP BY client
)`
)
