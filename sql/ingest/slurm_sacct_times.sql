-- The UTC times of a sacct dump's allocation rows, before the rest of its load
-- (slurm_sacct.sql), while gpucluster_analysis/ingest/slurm/staging.py links the rows into blocks.
-- Parameters: $zone (the zone of sacct's naive times).
-- Needs stage_sacct_allocs (its line, problem and time columns: the link's are added after)
-- and zone_periods for $zone (gpucluster_analysis.timezones). Makes stage_sacct_zone,
-- stage_sacct_time and stage_sacct_alloc_time, and the macro slurm_fixed_utc.

-- A zone of one offset for all time (UTC, Etc/GMT+5) needs no table of times: each time is
-- converted where it is read (fixed_offset_s; NULL for a zone whose clocks change).
CREATE OR REPLACE TEMP TABLE stage_sacct_zone AS
SELECT CASE WHEN count(*) = 1 THEN any_value(offset_s) END AS fixed_offset_s FROM zone_periods WHERE zone = $zone;

-- A staged time in a zone of one offset (NULL in another zone). '@...' texts are epoch
-- seconds (SLURM_TIME_FORMAT=%s), already UTC.
CREATE OR REPLACE TEMP MACRO slurm_fixed_utc(t, fixed_offset_s) AS
    CASE WHEN t[1] = '@' THEN CAST(t[2:] AS TIMESTAMP) ELSE CAST(t AS TIMESTAMP) - to_seconds(fixed_offset_s) END;

-- In a zone whose clocks change, each distinct naive local time, converted once through the
-- zone's offset periods. A time in the repeated fall-back hour gets its first occurrence
-- (utc_ts) and its second (utc_second), so that a run spanning the hour can take the reading
-- that keeps it in order.
CREATE OR REPLACE TEMP TABLE stage_sacct_time AS
WITH changing AS (SELECT * FROM stage_sacct_allocs WHERE (SELECT fixed_offset_s FROM stage_sacct_zone) IS NULL),
texts AS (
    SELECT submit_t AS t FROM changing
    UNION SELECT eligible_t FROM changing
    UNION SELECT start_t FROM changing
    UNION SELECT end_t FROM changing
),
parsed AS (SELECT t, CAST(t AS TIMESTAMP) AS local_ts FROM texts WHERE t IS NOT NULL AND t[1] <> '@'),
periods AS (
    SELECT local_start, offset_s,
           lead(local_start) OVER (ORDER BY local_start) AS next_start,
           lead(offset_s) OVER (ORDER BY local_start) AS next_offset_s
    FROM zone_periods WHERE zone = $zone
)
SELECT p.t, p.local_ts - to_seconds(z.offset_s) AS utc_ts,
       CASE WHEN z.next_offset_s < z.offset_s
                 AND p.local_ts >= z.next_start - to_seconds(z.offset_s - z.next_offset_s)
            THEN p.local_ts - to_seconds(z.next_offset_s) END AS utc_second
FROM parsed p ASOF LEFT JOIN periods z ON p.local_ts >= z.local_start
UNION ALL
SELECT t, CAST(t[2:] AS TIMESTAMP), NULL FROM texts WHERE t[1] = '@';

-- The UTC times of each allocation row. Start and End take their second reading in a
-- repeated fall-back hour when only that keeps Submit <= Start <= End. `disorder`: times out
-- of order would make negative waits or run times: the row is not believable.
CREATE OR REPLACE TEMP TABLE stage_sacct_alloc_time AS
WITH first_pass AS (
    SELECT a.line, a.submit_t, a.eligible_t, a.start_t, a.end_t,
           coalesce(ts.utc_ts, slurm_fixed_utc(a.submit_t, z.fixed_offset_s)) AS submit_at,
           coalesce(te.utc_ts, slurm_fixed_utc(a.eligible_t, z.fixed_offset_s)) AS eligible_at,
           CASE WHEN tb.utc_ts < ts.utc_ts AND tb.utc_second >= ts.utc_ts THEN tb.utc_second
                ELSE coalesce(tb.utc_ts, slurm_fixed_utc(a.start_t, z.fixed_offset_s)) END AS start_at,
           coalesce(tf.utc_ts, slurm_fixed_utc(a.end_t, z.fixed_offset_s)) AS end_first, tf.utc_second AS end_second
    FROM stage_sacct_allocs a
    CROSS JOIN stage_sacct_zone z
    LEFT JOIN stage_sacct_time ts ON ts.t = a.submit_t
    LEFT JOIN stage_sacct_time te ON te.t = a.eligible_t
    LEFT JOIN stage_sacct_time tb ON tb.t = a.start_t
    LEFT JOIN stage_sacct_time tf ON tf.t = a.end_t
    WHERE a.problem IS NULL
),
times AS (
    SELECT *, CASE WHEN end_first < start_at AND end_second >= start_at THEN end_second ELSE end_first END AS end_at
    FROM first_pass
)
SELECT line, submit_at, eligible_at, start_at, end_at,
       CASE WHEN end_at < start_at THEN 'End ' || ltrim(end_t, '@') || ' is before Start ' || ltrim(start_t, '@')
            WHEN start_at < submit_at THEN 'Start ' || ltrim(start_t, '@') || ' is before Submit ' || ltrim(submit_t, '@')
            WHEN eligible_at < submit_at THEN 'Eligible ' || ltrim(eligible_t, '@') || ' is before Submit ' || ltrim(submit_t, '@')
            WHEN start_at < eligible_at THEN 'Start ' || ltrim(start_t, '@') || ' is before Eligible ' || ltrim(eligible_t, '@')
       END AS disorder
FROM times;
