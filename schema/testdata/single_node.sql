-- bootstrap
CREATE TABLE IF NOT EXISTS schema_migrations (
    version UInt32,
    name String,
    applied_at DateTime
) ENGINE = ReplacingMergeTree()
ORDER BY version;

-- 0001_init.sql
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

-- 0001_init.sql
CREATE TABLE IF NOT EXISTS page_minutes (
    site String,
    path String,
    minute DateTime,
    seq UInt64,
    hits UInt64
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(minute)
ORDER BY (site, path, minute, seq);

-- 0001_init.sql
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

-- 0001_init.sql
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

