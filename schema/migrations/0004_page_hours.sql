-- Sealed per-hour totals, so that the baselines of spike rules (the same
-- hour on each of the last days, the trailing days' hours) read one row
-- per page and hour instead of every minute. Hours are UTC hours, in Unix
-- time (no server time zone is involved in an hour's start).
--
-- A page's hits in one UTC hour, summed from page_minutes by the sweeper
-- only, a whole UTC day at a time and by the rule page_days follows (see
-- 0002): a day's hours are sealed again whenever the day has more loaded
-- messages (loaded_days) than they were sealed with. version is how many
-- (minute, message) rows the sum covers: a page-hour only gains rows, so
-- the row with the highest version is the most complete. Reads use FINAL.
-- Ordered by hour first: a baseline reads a few hours (the same hour of
-- seven days) of thousands of pages, a key range per hour, where a
-- (site, path, hour) key would have it search every page's rows.
CREATE TABLE IF NOT EXISTS {{table "page_hours"}} (
    site String,
    path String,
    hour DateTime,
    hits UInt64,
    version UInt64
) ENGINE = {{engine "page_hours" "ReplacingMergeTree(version)"}}
PARTITION BY toYYYYMM(hour)
ORDER BY (hour, site, path);
-- Sharded by page like page_minutes and page_days.
{{distributed "page_hours" "cityHash64(site, path)"}}

-- The days whose hours the sweeper sealed and with how many messages
-- each, like sealed_days for page_days; kept apart so that the days
-- sealed before page_hours existed get their hours too. Written only
-- after the day's page_hours rows were all inserted.
CREATE TABLE IF NOT EXISTS {{table "sealed_hour_days"}} (
    day Date,
    batches UInt64
) ENGINE = {{engine "sealed_hour_days" "ReplacingMergeTree(batches)"}}
ORDER BY day;
-- Sharded by day: a day's seals replace each other on one shard.
{{distributed "sealed_hour_days" "cityHash64(day)"}}
