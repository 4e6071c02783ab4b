package clickhouse

// The statements that count visitors, from page_clients
// (schema/migrations/0005). A visitor is a distinct client key among a
// page's counted hits; rows without a key (client 0) are left out.
// Distinct counts need no deduplication: a batch loaded twice adds no
// client.
const (
	// insertPageClients is the loader's (clients.go).
	insertPageClients = `INSERT INTO page_clients (site, path, minute, seq, class, counted, client, hits)`

	// queryVisitorCounts is a format: visitorCountsSQL fills in one
	// uniqExactIf per window start (%[1]s) and the minute ranges the
	// windows cover (%[2]s). The ? bind each start, then the first
	// start, End, "every site", the sites and the floor.
	queryVisitorCounts = `SELECT site, path, counts FROM (
    SELECT site, path, [%[1]s] AS counts
    FROM page_clients
    WHERE minute >= toDateTime(?) AND minute < toDateTime(?) AND (? OR site IN ?)
        AND counted = 1 AND client != 0
    GROUP BY site, path
)
WHERE arrayExists(c -> c > ?, counts)`

	// querySpanVisitors is a format: spanVisitorsSQL fills in one
	// uniqExactIf per span (%[1]s) and the spans as ranges (%[2]s). The
	// ? bind each span's bounds, then the sites, "every path" and the
	// paths, and the ranges.
	querySpanVisitors = `SELECT site, path, [%[1]s] AS counts
FROM page_clients
WHERE site IN ? AND (? OR path IN ?) AND counted = 1 AND client != 0
    AND (%[2]s)
GROUP BY site, path`
)
