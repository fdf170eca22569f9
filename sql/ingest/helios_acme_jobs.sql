-- Load one Slurm-derived job CSV of the Helios (SenseTime, SC'21) or Acme (Shanghai AI Lab,
-- NSDI'24) traces into jobs and attempts: one job per row, one attempt per job that started.
-- Parameters: $path, $file_id, $source (helios or acme), $zone (zone of times without an
-- offset), $delim (a byte no line holds, so each line is read whole), $encoding (utf-8, or latin-1
-- for a file that is not UTF-8), $header_text (line 1,
-- skipped again where a concatenated file repeats it), $n_fields, and $pos_<column>: the
-- 1-based position of each column in the header, NULL when the file has no such column; the
-- sanity bounds $window_start, $window_end, $outside_years, $max_gpus_per_node, $gpu_bound,
-- $max_nodes_per_job, $node_bound (gpucluster_analysis/bounds.py).
-- Needs the temp table zone_periods for $zone (gpucluster_analysis.timezones).
-- Lines are read whole and split (trace_lines, sql/ingest/trace_macros.sql), so every
-- reject carries its exact line number.

-- A time as '2020-06-09 18:41:01' (local, no zone), or with an offset as Acme writes it
-- ('2023-03-01 00:18:22+08:00'); 'T' separator and fractional seconds accepted.
CREATE OR REPLACE TEMP MACRO trace_time_parts(t) AS (
    regexp_extract(t, '^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2}(\.\d+)?) ?(Z|[+-]\d{2}:?\d{2})?$',
                   ['day', 'clock', 'fraction', 'offset'])
);

CREATE OR REPLACE TEMP TABLE stage_job AS
SELECT line, text, len(fields) AS n_fields,
       CASE WHEN $pos_cluster IS NULL THEN fields[$pos_job_id]
            ELSE fields[$pos_cluster] || '/' || fields[$pos_job_id] END AS job_id,
       fields[$pos_user] AS user_name,
       fields[$pos_vc] AS vc,
       fields[$pos_gpu_num] AS gpu_text,
       fields[$pos_node_num] AS node_text,
       fields[$pos_state] AS state,
       fields[$pos_submit_time] AS submit_text,
       fields[$pos_start_time] AS start_text,
       fields[$pos_end_time] AS end_text
FROM trace_lines($path, $delim, $encoding, $max_line_size, $header_text);

-- Every distinct time text, converted once: by its own offset where it has one, else
-- through the zone's offset periods (first occurrence of a repeated hour).
CREATE OR REPLACE TEMP TABLE stage_time AS
WITH texts AS (
    SELECT submit_text AS t FROM stage_job
    UNION SELECT start_text FROM stage_job
    UNION SELECT end_text FROM stage_job
),
parsed AS (
    SELECT t, p.offset AS offset_text,
           TRY_CAST(p.day || ' ' || p.clock AS TIMESTAMP) AS local_ts
    FROM (SELECT t, trace_time_parts(t) AS p FROM texts WHERE t IS NOT NULL)
),
offsets AS (
    SELECT t, local_ts,
           CASE WHEN offset_text = '' THEN NULL
                WHEN offset_text = 'Z' THEN 0
                ELSE (CASE WHEN offset_text[1] = '-' THEN -1 ELSE 1 END)
                     * (CAST(offset_text[2:3] AS INTEGER) * 3600 + CAST(right(offset_text, 2) AS INTEGER) * 60)
           END AS own_offset_s
    FROM parsed
),
periods AS (SELECT local_start, offset_s FROM zone_periods WHERE zone = $zone)
SELECT o.t, o.local_ts, o.local_ts - to_seconds(coalesce(o.own_offset_s, z.offset_s)) AS utc_ts,
       -- a time without an offset as written, one with an offset in UTC
       NOT (CASE WHEN o.own_offset_s IS NULL THEN o.local_ts ELSE o.local_ts - to_seconds(o.own_offset_s) END
            >= $window_start
            AND CASE WHEN o.own_offset_s IS NULL THEN o.local_ts ELSE o.local_ts - to_seconds(o.own_offset_s) END
            < $window_end) AS out_of_years
FROM offsets o ASOF LEFT JOIN periods z ON o.local_ts >= z.local_start;

CREATE OR REPLACE TEMP TABLE stage_job_checked AS
SELECT j.*, ts.utc_ts AS submit_at, tb.utc_ts AS start_at, te.utc_ts AS end_at,
       TRY_CAST(j.gpu_text AS DOUBLE) AS gpus,
       TRY_CAST(j.node_text AS DOUBLE) AS nodes,
       ts.local_ts IS NULL AND j.submit_text IS NOT NULL AS bad_submit,
       tb.local_ts IS NULL AND j.start_text IS NOT NULL AS bad_start,
       te.local_ts IS NULL AND j.end_text IS NOT NULL AS bad_end,
       coalesce(ts.out_of_years, false) AS far_submit, coalesce(tb.out_of_years, false) AS far_start,
       coalesce(te.out_of_years, false) AS far_end,
       row_number() OVER (PARTITION BY j.job_id ORDER BY j.line) AS copy_no
FROM stage_job j
LEFT JOIN stage_time ts ON ts.t = j.submit_text
LEFT JOIN stage_time tb ON tb.t = j.start_text
LEFT JOIN stage_time te ON te.t = j.end_text;

DROP TABLE stage_job;  -- memory: everything it held is in stage_job_checked

-- Why a row cannot be stored; NULL when it is fine. The first reason in this order wins.
CREATE OR REPLACE TEMP TABLE stage_job_problem AS
SELECT line, text, problem FROM (
    SELECT line, text,
        CASE
            WHEN n_fields <> $n_fields THEN n_fields || ' fields where the header has ' || $n_fields
            WHEN job_id IS NULL THEN 'row without a job_id'
            WHEN bad_submit THEN 'unreadable submit_time ' || submit_text
            WHEN bad_start THEN 'unreadable start_time ' || start_text
            WHEN bad_end THEN 'unreadable end_time ' || end_text
            WHEN far_submit THEN 'submit_time ' || submit_text || $outside_years
            WHEN far_start THEN 'start_time ' || start_text || $outside_years
            WHEN far_end THEN 'end_time ' || end_text || $outside_years
            WHEN gpu_text IS NOT NULL AND (gpus IS NULL OR gpus < 0 OR gpus <> floor(gpus))
                THEN 'gpu_num is not a whole number of GPUs: ' || gpu_text
            WHEN node_text IS NOT NULL AND (nodes IS NULL OR nodes < 0 OR nodes <> floor(nodes))
                THEN 'node_num is not a whole number of nodes: ' || node_text
            WHEN nodes > $max_nodes_per_job THEN 'node_num ' || node_text || $node_bound
            WHEN gca_gpus_over(gpus, nodes, $max_gpus_per_node)
                THEN 'gpu_num ' || gpu_text || gca_on_nodes(CAST(nodes AS BIGINT)) || $gpu_bound
            WHEN end_at < start_at THEN 'end_time ' || end_text || ' is before start_time ' || start_text
            WHEN start_at < submit_at THEN 'start_time ' || start_text || ' is before submit_time ' || submit_text
            WHEN copy_no > 1 THEN 'duplicate job_id ' || job_id || ' (first seen on an earlier line)'
            WHEN job_id IN (SELECT job_id FROM jobs WHERE source = $source)
                THEN 'job_id ' || job_id || ' already stored from another file'
        END AS problem
    FROM stage_job_checked
)
WHERE problem IS NOT NULL;

INSERT INTO rejects (file_id, line, reason, text)
SELECT $file_id, line, problem, left(text, 500) FROM stage_job_problem;

CREATE OR REPLACE TEMP TABLE stage_job_ok AS
SELECT c.*,
       regexp_extract(state, '^CANCELLED by (\S+)$', 1) AS canceller,
       -- the Slurm state words as gpucluster_analysis/ingest/slurm/values.py reads them
       CASE upper(regexp_replace(coalesce(state, ''), ' by \S+$', ''))
           WHEN 'COMPLETED' THEN 'passed'
           WHEN 'PASS' THEN 'passed'      -- Philly's words, in Philly traces converted to this layout
           WHEN 'KILLED' THEN 'killed'
           WHEN 'FAILED' THEN 'failed'
           WHEN 'OUT_OF_MEMORY' THEN 'failed'
           WHEN 'LAUNCH_FAILED' THEN 'failed'
           WHEN 'CANCELLED' THEN 'killed'
           WHEN 'REVOKED' THEN 'killed'
           WHEN 'TIMEOUT' THEN 'timeout'
           WHEN 'DEADLINE' THEN 'timeout'
           WHEN 'NODE_FAIL' THEN 'node_fail'
           WHEN 'BOOT_FAIL' THEN 'node_fail'
           WHEN 'PREEMPTED' THEN 'preempted'
           WHEN 'RUNNING' THEN 'running'
           WHEN 'SUSPENDED' THEN 'running'
           WHEN 'COMPLETING' THEN 'running'
           WHEN 'PENDING' THEN 'pending'
           WHEN 'REQUEUED' THEN 'pending'
           ELSE 'unknown'
       END AS status
FROM stage_job_checked c
WHERE c.line NOT IN (SELECT line FROM stage_job_problem);

DROP TABLE stage_job_checked;

-- requested_gpus: gpu_num, also for a job that never started (its attempt holds the same count).
INSERT INTO jobs (source, job_id, user_name, vc, status, source_status, submit_at, cancelled_by, requested_gpus, file_id)
SELECT $source, job_id, user_name, vc, status, state, submit_at, nullif(canceller, ''), gpus, $file_id
FROM stage_job_ok;

-- One attempt per job that started: these traces keep one run per job. Slurm stamps
-- start = end on a job cancelled while pending (as the sacct reader knows): it never started,
-- and its "wait" until the cancel is no queueing delay.
INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, status, source_status,
                      num_gpus, num_nodes, file_id)
SELECT $source, job_id, 0, 0, start_at, end_at, status, state, gpus, CAST(nodes AS INTEGER), $file_id
FROM stage_job_ok
WHERE start_at IS NOT NULL AND NOT (upper(state) LIKE 'CANCELLED%' AND start_at = end_at);
