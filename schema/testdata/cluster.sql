-- bootstrap
CREATE TABLE IF NOT EXISTS pagewatch.schema_migrations ON CLUSTER `pw` (
    version UInt32,
    name String,
    applied_at DateTime
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/shared/pagewatch/schema_migrations', '{shard}-{replica}')
ORDER BY version;

-- 0001_init.sql
CREATE TABLE IF NOT EXISTS pagewatch.hits_local ON CLUSTER `pw` (
    ts DateTime,
    site String,
    path String,
    referer String,
    seq UInt64,
    line_offset UInt64
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/pagewatch/hits_local', '{replica}')
PARTITION BY toYYYYMMDD(ts)
ORDER BY (site, path, ts, seq, line_offset);

-- 0001_init.sql
CREATE TABLE IF NOT EXISTS pagewatch.hits ON CLUSTER `pw` AS pagewatch.hits_local
ENGINE = Distributed('pw', 'pagewatch', 'hits_local', cityHash64(site, path));

-- 0001_init.sql
CREATE TABLE IF NOT EXISTS pagewatch.page_minutes_local ON CLUSTER `pw` (
    site String,
    path String,
    minute DateTime,
    seq UInt64,
    hits UInt64
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/pagewatch/page_minutes_local', '{replica}')
PARTITION BY toYYYYMM(minute)
ORDER BY (site, path, minute, seq);

-- 0001_init.sql
CREATE TABLE IF NOT EXISTS pagewatch.page_minutes ON CLUSTER `pw` AS pagewatch.page_minutes_local
ENGINE = Distributed('pw', 'pagewatch', 'page_minutes_local', cityHash64(site, path));

-- 0001_init.sql
CREATE TABLE IF NOT EXISTS pagewatch.crossings_local ON CLUSTER `pw` (
    crossing_key String,
    rule String,
    site String,
    path String,
    window_text String,
    threshold UInt64,
    hits UInt64,
    crossed_at DateTime
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/pagewatch/crossings_local', '{replica}')
PARTITION BY toYYYYMM(crossed_at)
ORDER BY crossing_key;

-- 0001_init.sql
CREATE TABLE IF NOT EXISTS pagewatch.crossings ON CLUSTER `pw` AS pagewatch.crossings_local
ENGINE = Distributed('pw', 'pagewatch', 'crossings_local', cityHash64(crossing_key));

-- 0001_init.sql
CREATE TABLE IF NOT EXISTS pagewatch.notifications_local ON CLUSTER `pw` (
    at DateTime,
    crossing_key String,
    rule String,
    site String,
    path String,
    outcome String,
    smtp_code UInt16,
    error String,
    worker String
) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/pagewatch/notifications_local', '{replica}')
PARTITION BY toYYYYMM(at)
ORDER BY (crossing_key, at);

-- 0001_init.sql
CREATE TABLE IF NOT EXISTS pagewatch.notifications ON CLUSTER `pw` AS pagewatch.notifications_local
ENGINE = Distributed('pw', 'pagewatch', 'notifications_local', cityHash64(crossing_key));

-- 0002_page_days.sql
CREATE TABLE IF NOT EXISTS pagewatch.loaded_days_local ON CLUSTER `pw` (
    day Date,
    seq UInt64
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/pagewatch/loaded_days_local', '{replica}')
PARTITION BY toYYYYMM(day)
ORDER BY (day, seq);

-- 0002_page_days.sql
CREATE TABLE IF NOT EXISTS pagewatch.loaded_days ON CLUSTER `pw` AS pagewatch.loaded_days_local
ENGINE = Distributed('pw', 'pagewatch', 'loaded_days_local', cityHash64(day));

-- 0002_page_days.sql
CREATE TABLE IF NOT EXISTS pagewatch.page_days_local ON CLUSTER `pw` (
    site String,
    path String,
    day Date,
    hits UInt64,
    version UInt64
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/pagewatch/page_days_local', '{replica}', version)
PARTITION BY toYYYYMM(day)
ORDER BY (site, path, day);

-- 0002_page_days.sql
CREATE TABLE IF NOT EXISTS pagewatch.page_days ON CLUSTER `pw` AS pagewatch.page_days_local
ENGINE = Distributed('pw', 'pagewatch', 'page_days_local', cityHash64(site, path));

-- 0002_page_days.sql
CREATE TABLE IF NOT EXISTS pagewatch.sealed_days_local ON CLUSTER `pw` (
    day Date,
    batches UInt64
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/pagewatch/sealed_days_local', '{replica}', batches)
ORDER BY day;

-- 0002_page_days.sql
CREATE TABLE IF NOT EXISTS pagewatch.sealed_days ON CLUSTER `pw` AS pagewatch.sealed_days_local
ENGINE = Distributed('pw', 'pagewatch', 'sealed_days_local', cityHash64(day));

-- 0003_crossing_whys.sql
CREATE TABLE IF NOT EXISTS pagewatch.crossing_whys_local ON CLUSTER `pw` (
    crossing_key String,
    crossed_at DateTime,
    why String
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/pagewatch/crossing_whys_local', '{replica}')
PARTITION BY toYYYYMM(crossed_at)
ORDER BY crossing_key;

-- 0003_crossing_whys.sql
CREATE TABLE IF NOT EXISTS pagewatch.crossing_whys ON CLUSTER `pw` AS pagewatch.crossing_whys_local
ENGINE = Distributed('pw', 'pagewatch', 'crossing_whys_local', cityHash64(crossing_key));

-- 0004_page_hours.sql
CREATE TABLE IF NOT EXISTS pagewatch.page_hours_local ON CLUSTER `pw` (
    site String,
    path String,
    hour DateTime,
    hits UInt64,
    version UInt64
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/pagewatch/page_hours_local', '{replica}', version)
PARTITION BY toYYYYMM(hour)
ORDER BY (hour, site, path);

-- 0004_page_hours.sql
CREATE TABLE IF NOT EXISTS pagewatch.page_hours ON CLUSTER `pw` AS pagewatch.page_hours_local
ENGINE = Distributed('pw', 'pagewatch', 'page_hours_local', cityHash64(site, path));

-- 0004_page_hours.sql
CREATE TABLE IF NOT EXISTS pagewatch.sealed_hour_days_local ON CLUSTER `pw` (
    day Date,
    batches UInt64
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/pagewatch/sealed_hour_days_local', '{replica}', batches)
ORDER BY day;

-- 0004_page_hours.sql
CREATE TABLE IF NOT EXISTS pagewatch.sealed_hour_days ON CLUSTER `pw` AS pagewatch.sealed_hour_days_local
ENGINE = Distributed('pw', 'pagewatch', 'sealed_hour_days_local', cityHash64(day));

-- 0005_page_clients.sql
CREATE TABLE IF NOT EXISTS pagewatch.page_clients_local ON CLUSTER `pw` (
    site String,
    path String,
    minute DateTime,
    seq UInt64,
    class UInt8,
    counted UInt8,
    client UInt64,
    hits UInt64
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/pagewatch/page_clients_local', '{replica}')
PARTITION BY toYYYYMMDD(minute)
ORDER BY (site, path, minute, seq, class, counted, client);

-- 0005_page_clients.sql
CREATE TABLE IF NOT EXISTS pagewatch.page_clients ON CLUSTER `pw` AS pagewatch.page_clients_local
ENGINE = Distributed('pw', 'pagewatch', 'page_clients_local', cityHash64(site, path));

