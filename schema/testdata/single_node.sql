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

-- 0002_page_days.sql
CREATE TABLE IF NOT EXISTS loaded_days (
    day Date,
    seq UInt64
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (day, seq);

-- 0002_page_days.sql
CREATE TABLE IF NOT EXISTS page_days (
    site String,
    path String,
    day Date,
    hits UInt64,
    version UInt64
) ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(day)
ORDER BY (site, path, day);

-- 0002_page_days.sql
CREATE TABLE IF NOT EXISTS sealed_days (
    day Date,
    batches UInt64
) ENGINE = ReplacingMergeTree(batches)
ORDER BY day;

-- 0003_crossing_whys.sql
CREATE TABLE IF NOT EXISTS crossing_whys (
    crossing_key String,
    crossed_at DateTime,
    why String
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(crossed_at)
ORDER BY crossing_key;

-- 0004_page_hours.sql
CREATE TABLE IF NOT EXISTS page_hours (
    site String,
    path String,
    hour DateTime,
    hits UInt64,
    version UInt64
) ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(hour)
ORDER BY (hour, site, path);

-- 0004_page_hours.sql
CREATE TABLE IF NOT EXISTS sealed_hour_days (
    day Date,
    batches UInt64
) ENGINE = ReplacingMergeTree(batches)
ORDER BY day;

-- 0005_page_clients.sql
CREATE TABLE IF NOT EXISTS page_clients (
    site String,
    path String,
    minute DateTime,
    seq UInt64,
    class UInt8,
    counted UInt8,
    client UInt64,
    hits UInt64
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMMDD(minute)
ORDER BY (site, path, minute, seq, class, counted, client);

