-- A text/template rendered for a schema.Layout: on one server the plain
-- tables below; on a cluster each is a Replicated table_local on every
-- shard plus a Distributed table under the plain name (see schema.go).
--
-- Raw hits, one row per access-log line that is a page view: what the
-- emails' "top referrers" and operators' questions read. Only what those
-- need is kept (no client address, no user agent): less personal data, and
-- a narrower row loads faster. JetStream keeps the full hit for its max age.
-- ReplacingMergeTree keyed by (seq, line_offset): a batch that is loaded
-- twice (a loader killed between insert and ack) collapses to one copy, and
-- every query that counts groups by that key so it is exact before merges.
-- One partition per day, so retention drops whole days.
CREATE TABLE IF NOT EXISTS {{table "hits"}} (
    ts DateTime,
    site String,
    path String,
    referer String,
    seq UInt64,
    line_offset UInt64
) ENGINE = {{engine "hits" "ReplacingMergeTree()"}}
PARTITION BY toYYYYMMDD(ts)
ORDER BY (site, path, ts, seq, line_offset);
-- Sharded by page (cluster mode): the copies of a batch loaded twice meet
-- on one shard, where they replace each other, and a page's rows are read
-- from one shard.
{{distributed "hits" "cityHash64(site, path)"}}

-- Per-minute counts per page and per JetStream batch (seq): what the
-- sweeper reads. Written by the loader from the same batch as the raw hits,
-- not by a materialized view, because a view would count a re-inserted
-- block twice. The same batch always yields the same rows, so a replay
-- replaces rather than adds.
CREATE TABLE IF NOT EXISTS {{table "page_minutes"}} (
    site String,
    path String,
    minute DateTime,
    seq UInt64,
    hits UInt64
) ENGINE = {{engine "page_minutes" "ReplacingMergeTree()"}}
PARTITION BY toYYYYMM(minute)
ORDER BY (site, path, minute, seq);
-- Sharded by page, like hits and for the same reasons.
{{distributed "page_minutes" "cityHash64(site, path)"}}

-- Every threshold crossing the sweeper recorded, once per key.
CREATE TABLE IF NOT EXISTS {{table "crossings"}} (
    crossing_key String,
    rule String,
    site String,
    path String,
    window_text String,
    threshold UInt64,
    hits UInt64,
    crossed_at DateTime
) ENGINE = {{engine "crossings" "ReplacingMergeTree()"}}
PARTITION BY toYYYYMM(crossed_at)
ORDER BY crossing_key;
-- Sharded by key: a crossing recorded twice replaces itself on one shard.
{{distributed "crossings" "cityHash64(crossing_key)"}}

-- What the workers did with each notification job: sent, duplicate,
-- deferred, failed. An append-only history.
CREATE TABLE IF NOT EXISTS {{table "notifications"}} (
    at DateTime,
    crossing_key String,
    rule String,
    site String,
    path String,
    outcome String,
    smtp_code UInt16,
    error String,
    worker String
) ENGINE = {{engine "notifications" "MergeTree()"}}
PARTITION BY toYYYYMM(at)
ORDER BY (crossing_key, at);
-- Sharded by crossing, so one crossing's outcomes are read from one shard.
{{distributed "notifications" "cityHash64(crossing_key)"}}
