-- Why each crossing fired, next to the crossings history: the
-- domain/crossing.Why of the job as JSON (the count against the page's
-- normal, its rank on its site, its referrer domains against the week
-- before, its busiest minute), written by the sweeper in the same call as
-- the crossing. Read with crossings by crossing_key.
--
-- A table of its own rather than a column of crossings: ClickHouse 18.16
-- has no ADD COLUMN IF NOT EXISTS, so an ALTER that ran before its
-- migration was recorded (a migrator killed in between; on a cluster,
-- the local tables altered and not the Distributed one) would fail every
-- later Migrate; CREATE TABLE IF NOT EXISTS runs again harmlessly.
-- JSON in a String: the why grows with the kinds of rule, and it is read
-- one crossing at a time. Crossings without a why (sum rules, digests'
-- folded crossings of them) have no row.
CREATE TABLE IF NOT EXISTS {{table "crossing_whys"}} (
    crossing_key String,
    crossed_at DateTime,
    why String
) ENGINE = {{engine "crossing_whys" "ReplacingMergeTree()"}}
PARTITION BY toYYYYMM(crossed_at)
ORDER BY crossing_key;
-- Sharded by key like crossings: a crossing's why meets its copies on one
-- shard.
{{distributed "crossing_whys" "cityHash64(crossing_key)"}}
