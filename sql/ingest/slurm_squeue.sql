-- Load one log of Slurm pending-reason snapshots into pending_reasons: each snapshot is a
-- timestamp line written by `date -u +'# %Y-%m-%dT%H:%M:%SZ'` followed by the lines of
-- `squeue -h -t PD -o '%i|%r'` (`<jobid>|<reason>`), repeated.
-- Parameters: $path, $file_id, $zone (the zone of timestamps written without Z or an offset),
-- $delim (a byte no line holds, so each line is read whole), $encoding (utf-8, or latin-1),
-- $max_line_size, $cut (the last line has no line end: the log was being written when copied),
-- $window_start, $window_end, $outside_years (the years gca reads: gpucluster_analysis/bounds.py).
-- Needs the temp table zone_periods for $zone (gpucluster_analysis.timezones).
-- Rules (docs/schema.md, "Reading Slurm"): a data line belongs to the nearest timestamp line
-- above it; job ids are named as the sacct reader names them (array task 123_4, het
-- component 123+1 -> job 123); a pending array line (123_[6-11%3]) is one row per task.

-- Every non-blank line, whole, with its 1-based line number, what kind it is, and the
-- timestamp line above it (the last one before it: carried forward in line order).
CREATE OR REPLACE TEMP TABLE stage_squeue_line AS
WITH lines AS (
    SELECT ordinality AS line, text
    FROM read_csv($path, header = false, columns = {'text': 'VARCHAR'}, delim = $delim, quote = '',
                  escape = '', auto_detect = false, encoding = $encoding,
                  max_line_size = $max_line_size) WITH ORDINALITY
),
kinds AS (
    SELECT line, text,
           CASE WHEN ltrim(text, ' ' || chr(9))[1] = '#' THEN 'stamp'
                WHEN upper(replace(text, ' ', '')) = 'JOBID|REASON' THEN 'header'  -- squeue without -h
                ELSE 'data' END AS kind
    FROM lines WHERE text IS NOT NULL AND trim(text, ' ' || chr(9)) <> ''
)
SELECT line, text, kind,
       last_value(CASE WHEN kind = 'stamp' THEN line END IGNORE NULLS)
           OVER (ORDER BY line ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS stamp_line
FROM kinds;

-- Timestamp lines: ISO 8601, `T` or a space, optional seconds and fraction (date -Ins writes
-- a comma), then Z, an offset (+01:00, +0100, +01) or nothing (read in $zone: first
-- occurrence of a repeated hour, a skipped hour moved forward, as for sacct).
CREATE OR REPLACE TEMP TABLE stage_squeue_stamp AS
WITH parts AS (
    SELECT line,
           regexp_extract(trim(text, ' ' || chr(9)),
                          '^#\s*(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2})?)([.,]\d+)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$',
                          ['day', 'clock', 'fraction', 'zone']) AS p
    FROM stage_squeue_line WHERE kind = 'stamp'
),
parsed AS (
    SELECT line,
           CASE WHEN p.day <> '' THEN TRY_CAST(p.day || ' ' || p.clock || replace(p.fraction, ',', '.') AS TIMESTAMP) END AS local_ts,
           CASE WHEN p.zone = '' THEN NULL
                WHEN p.zone = 'Z' THEN 0
                ELSE (CASE WHEN p.zone[1] = '-' THEN -1 ELSE 1 END)
                     * (CAST(p.zone[2:3] AS INTEGER) * 3600
                        + coalesce(TRY_CAST(nullif(replace(p.zone[4:], ':', ''), '') AS INTEGER), 0) * 60)
           END AS own_offset_s
    FROM parts
),
periods AS (SELECT local_start, offset_s FROM zone_periods WHERE zone = $zone)
SELECT s.line, s.own_offset_s,
       s.local_ts - to_seconds(coalesce(s.own_offset_s, z.offset_s)) AS utc_at,
       CASE WHEN s.local_ts IS NULL
                THEN 'unreadable timestamp line (expected # YYYY-MM-DDTHH:MM:SSZ, as date -u +''# %Y-%m-%dT%H:%M:%SZ'' writes)'
            WHEN abs(s.own_offset_s) > 14 * 3600 THEN 'an offset beyond 14 hours'
            -- a time without an offset as written (the zone's rules are known for these years
            -- only), one with an offset in UTC
            WHEN NOT (s.local_ts - to_seconds(coalesce(s.own_offset_s, 0)) >= $window_start
                      AND s.local_ts - to_seconds(coalesce(s.own_offset_s, 0)) < $window_end)
                THEN 'the time ' || strftime(s.local_ts, '%Y-%m-%dT%H:%M:%S')
                     || CASE WHEN coalesce(s.own_offset_s, 0) <> 0
                             THEN ' (' || strftime(s.local_ts - to_seconds(s.own_offset_s), '%Y-%m-%dT%H:%M:%S') || ' UTC)'
                             ELSE '' END
                     || $outside_years
       END AS problem
FROM parsed s ASOF LEFT JOIN periods z ON s.local_ts >= z.local_start;

-- Data lines split at the first '|', and why one cannot be stored: its own fault first,
-- then its snapshot's. Job ids as squeue prints them: 123, 123_4 (array task),
-- 123_[6-11%3] or 123_[1,3,5-7] (pending tasks of an array; %3 is the throttle, not a
-- task), 123+1 (het component).
CREATE OR REPLACE TEMP TABLE stage_squeue_data AS
WITH split AS (
    SELECT line, stamp_line,
           strpos(text, '|') > 0 AS has_bar,
           trim(split_part(text, '|', 1), ' ' || chr(9)) AS id_text,
           trim(substr(text, strpos(text, '|') + 1), ' ' || chr(9)) AS reason
    FROM stage_squeue_line WHERE kind = 'data'
),
ids AS (
    SELECT *,
           regexp_full_match(id_text, '\d+(?:_(?:\d+|\[[^\]]*\]))?(?:\+\d+)?') AS id_ok,
           regexp_extract(id_text, '^(\d+)(?:_(\d+)|_\[([^\]]*)\])?(?:\+(\d+))?$', ['base', 'task', 'spec', 'het']) AS p
    FROM split
),
arrays AS (
    -- each range of an array's task list: N, N-M or N-M:S (every S-th)
    SELECT *,
           CASE WHEN p.spec <> '' THEN list_transform(
               string_split(regexp_replace(p.spec, '%\d+$', ''), ','),
               lambda x: regexp_extract(trim(x), '^(\d{1,7})(?:-(\d{1,7})(?::(\d{1,7}))?)?$', ['lo', 'hi', 'step']))
           END AS ranges
    FROM ids
),
checked AS (
    SELECT *,
           p.spec = '' OR (
               regexp_full_match(p.spec, '[0-9,:\- ]+(?:%\d+)?')
               AND list_bool_and(list_transform(ranges, lambda r:
                   r.lo <> ''
                   AND coalesce(TRY_CAST(nullif(r.hi, '') AS BIGINT), TRY_CAST(r.lo AS BIGINT)) >= TRY_CAST(r.lo AS BIGINT)
                   AND coalesce(TRY_CAST(nullif(r.step, '') AS BIGINT), 1) > 0
                   -- Slurm's MaxArraySize is at most 4000001: no task id is larger
                   AND coalesce(TRY_CAST(nullif(r.hi, '') AS BIGINT), TRY_CAST(r.lo AS BIGINT)) <= 4000000))
           ) AS spec_ok
    FROM arrays
)
SELECT d.line, d.stamp_line, d.reason, d.p.base AS base, d.p.task AS task, d.p.spec AS spec,
       TRY_CAST(nullif(d.p.het, '') AS INTEGER) AS het_offset, d.ranges, s.utc_at AS observed_at,
       CASE WHEN NOT d.has_bar THEN 'no ''|'' between job id and reason (expected <jobid>|<reason>, as squeue -o ''%i|%r'' writes)'
            WHEN NOT d.id_ok THEN 'unreadable job id ''' || d.id_text || ''''
            WHEN NOT d.spec_ok THEN 'unreadable array task list [' || d.p.spec || ']'
            WHEN d.reason = '' THEN 'no reason after ''|'''
            WHEN $cut AND d.line = (SELECT max(line) FROM stage_squeue_line)
                THEN 'the last line has no line end: the log was being written, its reason may be cut'
            WHEN d.stamp_line IS NULL THEN 'before the first timestamp line: when the snapshot was taken is not known'
            WHEN s.problem IS NOT NULL THEN 'under the timestamp line ' || d.stamp_line || ', which was rejected'
       END AS problem
FROM checked d
LEFT JOIN stage_squeue_stamp s ON s.line = d.stamp_line;

-- One row per job a readable line stands for: a pending array line for each of its tasks.
CREATE OR REPLACE TEMP TABLE stage_squeue_task AS
WITH expanded AS (
    SELECT line, stamp_line, observed_at, reason, het_offset,
           base || CASE WHEN task <> '' THEN '_' || task ELSE '' END AS job_id
    FROM stage_squeue_data WHERE problem IS NULL AND spec = ''
    UNION ALL
    SELECT line, stamp_line, observed_at, reason, het_offset,
           base || '_' || unnest(list_distinct(flatten(list_transform(ranges, lambda r: generate_series(
               TRY_CAST(r.lo AS BIGINT),
               coalesce(TRY_CAST(nullif(r.hi, '') AS BIGINT), TRY_CAST(r.lo AS BIGINT)),
               coalesce(TRY_CAST(nullif(r.step, '') AS BIGINT), 1))))))::VARCHAR AS job_id
    FROM stage_squeue_data WHERE problem IS NULL AND spec <> ''
)
-- a het job is one job, as in sacct: its components in one snapshot are one row, component 0's
SELECT line, observed_at, reason, job_id
FROM expanded
QUALIFY het_offset IS NULL
     OR row_number() OVER (PARTITION BY stamp_line, job_id, het_offset IS NULL ORDER BY het_offset, line) = 1;

-- One job at one time, met again (a repeated snapshot in this file: overlapping copies of a
-- log concatenated; or stored from another file) is one row: the same reason is unchanged, and
-- of different reasons the later holds (later line, then this file over the store). seq orders
-- them: the stored row 0, this file's by line.
CREATE OR REPLACE TEMP TABLE stage_squeue_choice AS
WITH candidates AS (
    SELECT job_id, observed_at, reason, line AS seq FROM stage_squeue_task
    UNION ALL
    SELECT r.job_id, r.observed_at, r.reason, 0
    FROM pending_reasons r
    JOIN (SELECT DISTINCT job_id, observed_at FROM stage_squeue_task) t USING (job_id, observed_at)
    WHERE r.source = 'slurm'
),
versions AS (
    SELECT job_id, observed_at, reason, max(seq) AS seq, bool_or(seq = 0) AS is_stored, count(*) AS copies,
           min(seq) FILTER (WHERE seq > 0) AS first_line
    FROM candidates GROUP BY job_id, observed_at, reason
)
-- the version kept is the latest; of its copies, the first (the stored one, else its first line)
SELECT job_id, observed_at,
       arg_max(reason, seq) AS reason, arg_max(first_line, seq) AS kept_line, arg_max(is_stored, seq) AS kept_stored,
       bool_or(is_stored) AS had_stored,
       count(*) - 1 AS superseded, sum(copies) - count(*) AS unchanged
FROM versions GROUP BY job_id, observed_at;

DELETE FROM pending_reasons WHERE source = 'slurm' AND (job_id, observed_at) IN (
    SELECT (job_id, observed_at) FROM stage_squeue_choice WHERE had_stored AND NOT kept_stored);

INSERT INTO pending_reasons (source, job_id, observed_at, reason, file_id, line)
SELECT 'slurm', job_id, observed_at, reason, $file_id, kept_line
FROM stage_squeue_choice WHERE NOT kept_stored;

INSERT INTO rejects (file_id, line, reason, text)
SELECT $file_id, r.line, r.reason, left(l.text, 500)
FROM (
    SELECT line, problem AS reason FROM stage_squeue_stamp WHERE problem IS NOT NULL
    UNION ALL
    SELECT line, problem FROM stage_squeue_data WHERE problem IS NOT NULL
) r
JOIN stage_squeue_line l USING (line);
