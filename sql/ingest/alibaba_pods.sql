-- Load one pod list of Alibaba's cluster-trace-gpu-v2023 (openb_pod_list_*.csv) into jobs
-- and attempts: one job per pod, one attempt per pod that was scheduled.
-- Parameters: $path, $file_id, $epoch (the instant the trace's relative seconds count from,
-- a naive UTC TIMESTAMP; --epoch, else 1970-01-01),
-- $encoding (utf-8, or latin-1 for a file that is not UTF-8), $delim, $header_text, $n_fields
-- and $pos_<column> (1-based position of each column in the header, NULL when absent), as in
-- helios_acme_jobs.sql; $anchored (whether --epoch named the trace start) and the sanity bounds
-- $window_start, $window_end, $outside_years, $max_gpus_per_node, $gpu_bound
-- (gpucluster_analysis/bounds.py).
-- creation/scheduled/deletion_time are whole seconds since the trace start. A pod runs on
-- one node; it holds num_gpu x gpu_milli/1000 GPUs (gpu_milli < 1000: a shared GPU).


-- Whole non-negative seconds ('9437497', also '9437497.0' as pandas writes a column with
-- gaps), under 10^12 (30,000 years: a bigger number would overflow a timestamp); anything else
-- is NULL and its row is rejected. (Seconds past the window are rejected below, saying so.)
CREATE OR REPLACE TEMP MACRO trace_seconds(t) AS (
    CASE WHEN TRY_CAST(t AS DOUBLE) >= 0 AND TRY_CAST(t AS DOUBLE) < 1e12
              AND TRY_CAST(t AS DOUBLE) = floor(TRY_CAST(t AS DOUBLE))
         THEN CAST(TRY_CAST(t AS DOUBLE) AS BIGINT) END
);

-- Each line read whole and split (trace_lines, sql/ingest/trace_macros.sql).
CREATE OR REPLACE TEMP TABLE stage_pod AS
SELECT line, text, n_fields, job_id, phase,
       gpu_text, milli_text, created_text, scheduled_text, deleted_text,
       TRY_CAST(gpu_text AS DOUBLE) AS num_gpu,
       TRY_CAST(milli_text AS DOUBLE) AS gpu_milli,
       trace_seconds(created_text) AS created_s,
       trace_seconds(scheduled_text) AS scheduled_s,
       trace_seconds(deleted_text) AS deleted_s,
       row_number() OVER (PARTITION BY job_id ORDER BY line) AS copy_no
FROM (
    SELECT line, text, len(fields) AS n_fields,
           fields[$pos_name] AS job_id,
           fields[$pos_pod_phase] AS phase,
           fields[$pos_num_gpu] AS gpu_text,
           fields[$pos_gpu_milli] AS milli_text,
           fields[$pos_creation_time] AS created_text,
           fields[$pos_scheduled_time] AS scheduled_text,
           fields[$pos_deletion_time] AS deleted_text
    FROM trace_lines($path, $delim, $encoding, $max_line_size, $header_text)
);

-- Why a pod's time (s seconds after the start) is outside the years gca reads (bounds.py), or
-- NULL: anchored by --epoch, the instant itself must be in [lo, hi), the window; counted from an
-- unknown start (dates from 1970 that mean nothing), it must be less than the window's length
-- after it: [lo, hi) is then [start, start + that length).
CREATE OR REPLACE TEMP MACRO pod_time_problem(name, text, instant, anchored, lo, hi, outside_years) AS (
    CASE WHEN instant IS NULL OR (instant >= lo AND instant < hi) THEN NULL
         WHEN anchored THEN name || ' ' || text || ' (' || strftime(instant, '%Y-%m-%dT%H:%M:%SZ') || ')' || outside_years
         ELSE name || ' ' || text || ' s after the trace start: more than the ' || (year(hi) - year(lo))
              || ' years gca reads' END
);

CREATE OR REPLACE TEMP TABLE stage_pod_problem AS
WITH window_of AS (
    SELECT CASE WHEN $anchored THEN $window_start ELSE $epoch END AS lo,
           CASE WHEN $anchored THEN $window_end ELSE $epoch + ($window_end - $window_start) END AS hi
),
timed AS (
    SELECT p.*, coalesce(
        pod_time_problem('creation_time', created_text, $epoch + to_seconds(created_s), $anchored, w.lo, w.hi, $outside_years),
        pod_time_problem('scheduled_time', scheduled_text, $epoch + to_seconds(scheduled_s), $anchored, w.lo, w.hi,
                         $outside_years),
        pod_time_problem('deletion_time', deleted_text, $epoch + to_seconds(deleted_s), $anchored, w.lo, w.hi, $outside_years)
    ) AS far
    FROM stage_pod p CROSS JOIN window_of w
)
SELECT line, text, problem FROM (
    SELECT line, text,
        CASE
            WHEN n_fields <> $n_fields THEN n_fields || ' fields where the header has ' || $n_fields
            WHEN job_id IS NULL THEN 'row without a pod name'
            WHEN created_text IS NOT NULL AND created_s IS NULL
                THEN 'creation_time is not whole seconds since the trace start: ' || created_text
            WHEN scheduled_text IS NOT NULL AND scheduled_s IS NULL
                THEN 'scheduled_time is not whole seconds since the trace start: ' || scheduled_text
            WHEN deleted_text IS NOT NULL AND deleted_s IS NULL
                THEN 'deletion_time is not whole seconds since the trace start: ' || deleted_text
            WHEN far IS NOT NULL THEN far
            WHEN gpu_text IS NOT NULL AND (num_gpu IS NULL OR num_gpu < 0 OR num_gpu <> floor(num_gpu))
                THEN 'num_gpu is not a whole number of GPUs: ' || gpu_text
            -- a pod runs on one node
            WHEN num_gpu > $max_gpus_per_node THEN 'num_gpu ' || gpu_text || ' on one node' || $gpu_bound
            WHEN milli_text IS NOT NULL AND (gpu_milli IS NULL OR gpu_milli < 0 OR gpu_milli > 1000)
                THEN 'gpu_milli is not a share of a GPU between 0 and 1000: ' || milli_text
            WHEN num_gpu > 0 AND gpu_milli IS NOT NULL AND gpu_milli = 0
                THEN 'num_gpu ' || gpu_text || ' with gpu_milli 0: how much GPU the pod holds is unknown'
            WHEN scheduled_s < created_s THEN 'scheduled_time ' || scheduled_text || ' is before creation_time ' || created_text
            WHEN deleted_s < scheduled_s THEN 'deletion_time ' || deleted_text || ' is before scheduled_time ' || scheduled_text
            WHEN copy_no > 1 THEN 'duplicate pod name ' || job_id || ' (first seen on an earlier line)'
            WHEN job_id IN (SELECT job_id FROM jobs WHERE source = 'alibaba')
                -- the openb_pod_list_* files are samples of one workload: one of them per store
                THEN 'pod ' || job_id || ' already stored from another file (the pod lists sample the same pods: ingest one per store)'
        END AS problem
    FROM timed
)
WHERE problem IS NOT NULL;

INSERT INTO rejects (file_id, line, reason, text)
SELECT $file_id, line, problem, left(text, 500) FROM stage_pod_problem;

CREATE OR REPLACE TEMP TABLE stage_pod_ok AS
SELECT p.*,
       CASE lower(coalesce(phase, ''))
           WHEN 'succeeded' THEN 'passed'
           WHEN 'failed' THEN 'failed'
           WHEN 'running' THEN 'running'
           WHEN 'pending' THEN 'pending'
           ELSE 'unknown'
       END AS status,
       -- the GPUs the pod holds, or asks for while pending: num_gpu x gpu_milli/1000 (a shared GPU: < 1)
       CASE WHEN num_gpu = 0 THEN 0.0 ELSE num_gpu * gpu_milli / 1000 END AS gpus,
       $epoch + to_seconds(created_s) AS submit_at,
       $epoch + to_seconds(scheduled_s) AS start_at,
       $epoch + to_seconds(deleted_s) AS end_at
FROM stage_pod p
WHERE p.line NOT IN (SELECT line FROM stage_pod_problem);

-- requested_gpus: what a pending pod waits for, as a scheduled one's attempt holds it.
INSERT INTO jobs (source, job_id, user_name, vc, status, source_status, submit_at, requested_gpus, file_id)
SELECT 'alibaba', job_id, NULL, NULL, status, phase, submit_at, gpus, $file_id
FROM stage_pod_ok;

-- A pod that was scheduled ran once, on one node, until it was deleted.
INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, status, source_status,
                      num_gpus, num_nodes, file_id)
SELECT 'alibaba', job_id, 0, 0, start_at, end_at, status, phase,
       gpus, 1, $file_id
FROM stage_pod_ok
WHERE start_at IS NOT NULL;
