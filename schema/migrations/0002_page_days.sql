-- Sealed per-day totals, so that a sweep over long windows (all time,
-- this month) reads one row per page and day instead of every minute.
-- Days are UTC days: the loader computes them in Go, where the server's
-- time zone is unknown, and every statement converts with 'UTC'.
--
-- One row per JetStream message (seq) and UTC day its hits fall in,
-- written by the loader after the message's page_minutes rows were
-- inserted, never before. A day's number of distinct seqs therefore only
-- grows, and every message it counts is already in page_minutes: what the
-- sweeper compares with the number it sealed the day with (sealed_days).
-- A message loaded twice writes the same row again, which changes nothing.
CREATE TABLE IF NOT EXISTS {{table "loaded_days"}} (
    day Date,
    seq UInt64
) ENGINE = {{engine "loaded_days" "ReplacingMergeTree()"}}
PARTITION BY toYYYYMM(day)
ORDER BY (day, seq);
-- Sharded by day (cluster mode): a message's copies meet on one shard,
-- where they replace each other, and a day's messages are counted on one.
{{distributed "loaded_days" "cityHash64(day)"}}

-- A page's hits on one UTC day, summed from page_minutes (one row per
-- minute and message, like every count) by the sweeper only. version is
-- how many such rows the sum covers: a page-day only gains rows, so the
-- row with the highest version is the most complete and two rows with the
-- same version are equal, whichever sweeper wrote them and in whatever
-- order. Reads use FINAL, which keeps that row before merges as merges do.
CREATE TABLE IF NOT EXISTS {{table "page_days"}} (
    site String,
    path String,
    day Date,
    hits UInt64,
    version UInt64
) ENGINE = {{engine "page_days" "ReplacingMergeTree(version)"}}
PARTITION BY toYYYYMM(day)
ORDER BY (site, path, day);
-- Sharded by page like page_minutes: a page-day's versions meet on one
-- shard, next to the minutes they were summed from.
{{distributed "page_days" "cityHash64(site, path)"}}

-- The days the sweeper sealed and with how many messages (loaded_days)
-- each. Written only after the day's page_days rows were all inserted, so
-- a sealer dying half-way leaves the day unsealed and the next one redoes
-- it. A day sealed twice keeps the larger count.
CREATE TABLE IF NOT EXISTS {{table "sealed_days"}} (
    day Date,
    batches UInt64
) ENGINE = {{engine "sealed_days" "ReplacingMergeTree(batches)"}}
ORDER BY day;
-- Sharded by day: a day's seals replace each other on one shard.
{{distributed "sealed_days" "cityHash64(day)"}}
