-- Raw hits, one row per access-log line that is a page view: what the
-- emails' "top referrers" and operators' questions read. Only what those
-- need is kept (no client address, no user agent): less personal data, and
-- a narrower row loads faster. JetStream keeps the full hit for its max age.
-- ReplacingMergeTree keyed by (seq, line_offset): a batch that is loaded
-- twice (a loader killed between insert and ack) collapses to one copy, and
-- every query that counts groups by that key so it is exact before merges.
-- One partition per day, so retention drops whole days.
CREATE TABLE IF NOT EXISTS hits (
    ts DateTime,
    site String,
    path String,
    referer String,
    seq UInt64,
    line_offset UInt64
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMMDD(ts)
ORDER BY (site, path, ts, seq, line_offset);

-- Per-minute counts per page and per JetStream batch (seq): what the
-- sweeper reads. Written by the loader from the same batch as the raw hits,
-- not by a materialized view, because a view would count a re-inserted
-- block twice. The same batch always yields the same rows, so a replay
-- replaces rather than adds.
CREATE TABLE IF NOT EXISTS page_minutes (
    site String,
    path String,
    minute DateTime,
    seq UInt64,
    hits UInt64
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(minute)
ORDER BY (site, path, minute, seq);

-- Every threshold crossing the sweeper recorded, once per key.
CREATE TABLE IF NOT EXISTS crossings (
    crossing_key String,
    rule String,
    site String,
    path String,
    window_text String,
    threshold UInt64,
    hits UInt64,
    crossed_at DateTime
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(crossed_at)
ORDER BY crossing_key;

-- What the workers did with each notification job: sent, duplicate,
-- deferred, failed. An append-only history.
CREATE TABLE IF NOT EXISTS notifications (
    at DateTime,
    crossing_key String,
    rule String,
    site String,
    path String,
    outcome String,
    smtp_code UInt16,
    error String,
    worker String
) ENGINE = MergeTree()
PARTITION BY toYYYYMM(at)
ORDER BY (crossing_key, at);
