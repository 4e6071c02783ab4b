-- Who sent each page's hits, per minute: one row per page, minute,
-- message (seq), client class and client key, with the hits of that
-- client in that minute. What visitor counts (uniqExact of client over a
-- window), the share of the busiest client and the share of each class
-- read; page_minutes stays the count of views.
--
-- client is the hit's client key, a keyed hash of its address and user
-- agent under a salt that changes every UTC day (pipeline/visitor): no
-- address or user agent is kept here or anywhere. 0: the tailer made no
-- key (visitors are off there, or it predates them); visitor counts
-- leave such rows out. class is domain/hit.Class: 0 unknown, 1 human,
-- 2 bot, 3 ai_agent, 4 ai_crawler. counted is 1 when the tailer counted
-- the class as page views (ingest.tail.pages.count_classes): hits that
-- are not counted are here, and only here, so that a page's share of
-- bots is known.
--
-- Written by the loader from the same batch as page_minutes, keyed like
-- it by message: a batch loaded twice writes the same rows, which replace
-- each other, and visitor counts are distinct clients, which a copy does
-- not change. Counts of hits group by the whole key first, as
-- page_minutes' do.
--
-- One partition per UTC day, like hits: retention drops it with the raw
-- hits (ingest.load.retention.raw_hits_days), so visitor rules see as
-- far back as raw hits are kept. Ordered by page first: a visitor count
-- reads one page's, or one site's, minutes of a window.
CREATE TABLE IF NOT EXISTS {{table "page_clients"}} (
    site String,
    path String,
    minute DateTime,
    seq UInt64,
    class UInt8,
    counted UInt8,
    client UInt64,
    hits UInt64
) ENGINE = {{engine "page_clients" "ReplacingMergeTree()"}}
PARTITION BY toYYYYMMDD(minute)
ORDER BY (site, path, minute, seq, class, counted, client);
-- Sharded by page like page_minutes: a page's clients are counted on one
-- shard, where a batch's copies meet.
{{distributed "page_clients" "cityHash64(site, path)"}}
