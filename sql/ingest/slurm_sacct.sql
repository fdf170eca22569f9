-- Load one sacct dump into jobs, attempts and attempt_hosts.
-- Parameters: $file_id, $zone (the zone of sacct's naive times).
-- Needs the temp tables filled by gpucluster_analysis/ingest/slurm.py:
--   stage_sacct       one row per data line: the parsed job id (job_id with the array task,
--                     het_offset, step), fields, and `problem` when the line is unreadable;
--                     `digest`, md5 of its text; `text` where it was read line by line
--                     (rejects of the other rows get theirs from slurm.py afterwards);
--   stage_sacct_host  (line, machine_id): the expanded NodeList of allocation rows;
--   zone_periods      for $zone (gpucluster_analysis.timezones).
-- Rules (docs/schema.md, "Reading Slurm"): a job's lines in one dump are one record of it,
-- but for a block of them that lists a run again (a concatenation of dumps repeats a job in
-- another block); a step belongs to the nearest allocation row above it in its block; each allocation row of a record is a run (requeue),
-- but rows of a record with the same Submit and Start are one run (the last is kept); het
-- components with the same position among their component's rows form one attempt.
-- Of a job's records, in this file and in the store (sacct_records), one is kept: a finished
-- one before an unfinished one, then the one naming the latest time (End), then the later
-- (stored before this file, earlier lines before later ones); an identical record changes nothing.

-- Each distinct naive local time, converted once through the zone's offset periods. A time
-- in the repeated fall-back hour gets its first occurrence (utc_ts) and its second
-- (utc_second), so that a run spanning the hour can take the reading that keeps it in order.
-- '@...' texts are epoch seconds (SLURM_TIME_FORMAT=%s), already UTC.
CREATE OR REPLACE TEMP TABLE stage_sacct_time AS
WITH texts AS (
    SELECT submit_t AS t FROM stage_sacct
    UNION SELECT eligible_t FROM stage_sacct
    UNION SELECT start_t FROM stage_sacct
    UNION SELECT end_t FROM stage_sacct
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

-- Every readable row with its record (record_no) and the line of its allocation row (its own
-- line for an allocation). A block is a job's run of consecutive lines; a repeated header
-- starts a new one. sacct -D lists each run of a requeued job where its own Submit falls
-- among the other jobs' (Slurm 22.05), so a job's later block in the same dump continues its
-- record, unless it lists a run seen in an earlier block (an allocation row with the same
-- Submit, or one without Submit, which cannot tell): then it is another copy of the job, as
-- in dumps concatenated without their header. record_no is the record's first block.
-- The windows run over the keys alone (a sort of the whole dump that carries every column
-- costs ~10x more at a million jobs), then the columns the checks and digests read are joined back;
-- stage_sacct_alloc takes the rest of the rows it keeps from stage_sacct.
CREATE OR REPLACE TEMP TABLE stage_sacct_linked AS
WITH keyed AS (
    SELECT line, job_id, dump, het_offset, step IS NULL AS is_alloc, submit_t,
           (job_id IS DISTINCT FROM lag(job_id) OVER w OR dump IS DISTINCT FROM lag(dump) OVER w)::INTEGER AS starts
    FROM stage_sacct WHERE job_id IS NOT NULL
    WINDOW w AS (ORDER BY line)
),
blocks AS (
    SELECT line, job_id, dump, het_offset, is_alloc, submit_t,
           sum(starts) OVER (ORDER BY line ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS block_no
    FROM keyed
),
-- only jobs met in more than one block of a dump need more (few: requeues and repeats)
split AS (
    SELECT job_id, dump FROM blocks GROUP BY job_id, dump HAVING min(block_no) <> max(block_no)
),
block_runs AS (
    SELECT b.job_id, b.dump, b.block_no,
           list(DISTINCT b.submit_t) FILTER (WHERE b.is_alloc AND b.submit_t IS NOT NULL) AS submits,
           bool_or(b.is_alloc AND b.submit_t IS NULL) AS unkeyed
    FROM blocks b SEMI JOIN split s ON s.job_id = b.job_id AND s.dump IS NOT DISTINCT FROM b.dump
    GROUP BY b.job_id, b.dump, b.block_no
),
copies AS (
    SELECT b.job_id, b.dump, b.block_no, count(e.block_no) AS copy_no
    FROM block_runs b LEFT JOIN block_runs e
      ON e.job_id = b.job_id AND e.dump IS NOT DISTINCT FROM b.dump AND e.block_no < b.block_no
     AND (b.unkeyed OR e.unkeyed OR list_has_any(e.submits, b.submits))
    GROUP BY b.job_id, b.dump, b.block_no
),
records AS (
    SELECT block_no, min(block_no) OVER (PARTITION BY job_id, dump, copy_no) AS record_no FROM copies
),
linked AS (
    SELECT b.line, coalesce(r.record_no, b.block_no) AS record_no,
        CASE WHEN b.is_alloc THEN b.line
             ELSE max(CASE WHEN b.is_alloc THEN b.line END) OVER (
                 PARTITION BY b.block_no, b.het_offset ORDER BY b.line
                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
        END AS alloc_line
    FROM blocks b LEFT JOIN records r USING (block_no)
)
SELECT s.line, s.job_id, s.het_offset, s.step, s.problem, s.state, s.status, s.exit_code,
       s.submit_t, s.eligible_t, s.start_t, s.end_t, s.digest, l.record_no, l.alloc_line
FROM stage_sacct s JOIN linked l USING (line);

-- The UTC times of each allocation row. Start and End take their second reading in a
-- repeated fall-back hour when only that keeps Submit <= Start <= End.
CREATE OR REPLACE TEMP TABLE stage_sacct_alloc_time AS
WITH first_pass AS (
    SELECT a.line, ts.utc_ts AS submit_at, te.utc_ts AS eligible_at,
           CASE WHEN tb.utc_ts < ts.utc_ts AND tb.utc_second >= ts.utc_ts THEN tb.utc_second ELSE tb.utc_ts END AS start_at,
           tf.utc_ts AS end_first, tf.utc_second AS end_second
    FROM stage_sacct_linked a
    LEFT JOIN stage_sacct_time ts ON ts.t = a.submit_t
    LEFT JOIN stage_sacct_time te ON te.t = a.eligible_t
    LEFT JOIN stage_sacct_time tb ON tb.t = a.start_t
    LEFT JOIN stage_sacct_time tf ON tf.t = a.end_t
    WHERE a.step IS NULL AND a.problem IS NULL
)
SELECT line, submit_at, eligible_at, start_at,
       CASE WHEN end_first < start_at AND end_second >= start_at THEN end_second ELSE end_first END AS end_at
FROM first_pass;

-- Why an allocation row cannot be stored; first reason wins.
CREATE OR REPLACE TEMP TABLE stage_sacct_alloc_problem AS
WITH allocs AS (SELECT * FROM stage_sacct_linked WHERE step IS NULL),
-- Times out of order would make negative waits or run times: the row is not believable.
disorder AS (
    SELECT t.line,
           CASE WHEN t.end_at < t.start_at THEN 'End ' || ltrim(a.end_t, '@') || ' is before Start ' || ltrim(a.start_t, '@')
                WHEN t.start_at < t.submit_at THEN 'Start ' || ltrim(a.start_t, '@') || ' is before Submit ' || ltrim(a.submit_t, '@')
                WHEN t.eligible_at < t.submit_at THEN 'Eligible ' || ltrim(a.eligible_t, '@') || ' is before Submit ' || ltrim(a.submit_t, '@')
                WHEN t.start_at < t.eligible_at THEN 'Start ' || ltrim(a.start_t, '@') || ' is before Eligible ' || ltrim(a.eligible_t, '@')
           END AS reason
    FROM stage_sacct_alloc_time t JOIN allocs a USING (line)
),
-- A record repeating a run: the last row is the newest word on it. (Repeated records of a job
-- are chosen between below, not rejected.) A dump without Submit and Start cannot tell a
-- repeat from a requeued run: its rows are taken as sacct -D prints them, one run each.
repeats AS (
    SELECT line, job_id, max(line) OVER (PARTITION BY record_no, het_offset, submit_t, start_t) AS last_line
    FROM allocs WHERE problem IS NULL AND (submit_t IS NOT NULL OR start_t IS NOT NULL)
),
problems AS (
    SELECT line, problem AS reason FROM allocs WHERE problem IS NOT NULL
    UNION ALL
    SELECT line, reason || ' (times out of order)' FROM disorder WHERE reason IS NOT NULL
    UNION ALL
    SELECT line, 'same JobID, Submit and Start as line ' || last_line || ', which is kept'
    FROM repeats WHERE line < last_line

)
SELECT line, min_by(reason, reason) AS reason FROM problems GROUP BY line;

CREATE OR REPLACE TEMP TABLE stage_sacct_step_problem AS
WITH steps AS (SELECT * FROM stage_sacct_linked WHERE step IS NOT NULL),
repeats AS (
    SELECT line, min(line) OVER (PARTITION BY alloc_line, step) AS first_line
    FROM steps WHERE problem IS NULL AND alloc_line IS NOT NULL
),
problems AS (
    SELECT line, problem AS reason FROM steps WHERE problem IS NOT NULL
    UNION ALL
    SELECT line, 'step of job ' || job_id || coalesce('+' || het_offset, '')
                 || ' without its allocation row above it' FROM steps WHERE alloc_line IS NULL
    UNION ALL
    SELECT s.line, 'step of the allocation row at line ' || s.alloc_line || ', which was rejected'
    FROM steps s JOIN stage_sacct_alloc_problem p ON p.line = s.alloc_line
    WHERE s.problem IS NULL
    UNION ALL
    SELECT line, 'duplicate of line ' || first_line || ' (same step of the same run)'
    FROM repeats WHERE line > first_line
)
SELECT line, min_by(reason, reason) AS reason FROM problems GROUP BY line;

INSERT INTO rejects (file_id, line, reason, text)
SELECT $file_id, s.line, r.reason, s.text
FROM (
    SELECT line, problem AS reason FROM stage_sacct WHERE job_id IS NULL
    UNION ALL SELECT line, reason FROM stage_sacct_alloc_problem
    UNION ALL SELECT line, reason FROM stage_sacct_step_problem
) r
JOIN stage_sacct s USING (line);

-- Status ranks: a worse outcome ranks higher; a run still going outranks any outcome.
CREATE OR REPLACE TEMP MACRO slurm_status_rank(status) AS
    CASE status WHEN 'passed' THEN 1 WHEN 'killed' THEN 2 WHEN 'timeout' THEN 3 WHEN 'preempted' THEN 4
        WHEN 'failed' THEN 5 WHEN 'node_fail' THEN 6 WHEN 'unknown' THEN 7 WHEN 'pending' THEN 8
        WHEN 'running' THEN 9 END;

CREATE OR REPLACE TEMP MACRO slurm_rank_status(rank) AS
    CASE rank WHEN 1 THEN 'passed' WHEN 2 THEN 'killed' WHEN 3 THEN 'timeout' WHEN 4 THEN 'preempted'
        WHEN 5 THEN 'failed' WHEN 6 THEN 'node_fail' WHEN 7 THEN 'unknown' WHEN 8 THEN 'pending'
        WHEN 9 THEN 'running' END;

-- Each record of a job in this file that has a storable allocation row: whether it is finished
-- (its last run, by start with a run not started last, is in a final state), the latest time
-- it names, and a digest of its lines (as staged: the first 500 characters of each) and zone.
CREATE OR REPLACE TEMP TABLE stage_sacct_record AS
WITH good AS (
    SELECT a.record_no, a.job_id, a.line, a.state, a.status, t.submit_at, t.eligible_at, t.start_at, t.end_at,
           row_number() OVER (PARTITION BY a.record_no ORDER BY t.start_at DESC NULLS FIRST, a.line DESC) AS from_last
    FROM stage_sacct_linked a
    JOIN stage_sacct_alloc_time t USING (line)
    WHERE a.step IS NULL AND a.line NOT IN (SELECT line FROM stage_sacct_alloc_problem)
),
summary AS (
    SELECT record_no, any_value(job_id) AS job_id,
           bool_or(from_last = 1 AND state NOT IN ('REQUEUED', 'REQUEUE_FED', 'REQUEUE_HOLD', 'SPECIAL_EXIT')
                   AND status IN ('passed', 'failed', 'node_fail', 'killed', 'timeout', 'preempted')) AS finished,
           max(greatest(submit_at, eligible_at, start_at, end_at)) AS last_at
    FROM good GROUP BY record_no
),
-- md5 per line (stage_sacct.digest), then of the record's list: the aggregate holds 32 bytes a line, not the text
digests AS (
    SELECT l.record_no, md5($zone || ':' || string_agg(l.digest, '' ORDER BY l.line)) AS digest
    FROM stage_sacct_linked l
    WHERE l.record_no IN (SELECT record_no FROM summary)
    GROUP BY l.record_no
)
SELECT s.*, d.digest FROM summary s JOIN digests d USING (record_no);

-- Per job of this file: its versions (distinct digests) among its records here and the stored
-- one, the version kept, and how many records were superseded by another version or repeated
-- one (unchanged). seq orders the records in time: the stored one 0, this file's by line.
CREATE OR REPLACE TEMP TABLE stage_sacct_choice AS
WITH stored AS (
    SELECT r.job_id, bool_or(r.finished) AS finished, max(r.last_at) AS last_at, any_value(r.digest) AS digest
    FROM sacct_records r
    WHERE r.source = 'slurm' AND r.job_id IN (SELECT job_id FROM stage_sacct_record)
    GROUP BY r.job_id
),
candidates AS (
    SELECT job_id, record_no AS seq, finished, last_at, digest FROM stage_sacct_record
    UNION ALL
    SELECT job_id, 0, finished, last_at, digest FROM stored
),
versions AS (
    SELECT job_id, digest, max(seq) AS seq, bool_or(seq = 0) AS is_stored, count(*) AS copies,
           any_value(finished) AS finished, any_value(last_at) AS last_at
    FROM candidates GROUP BY job_id, digest
),
ranked AS (
    SELECT *, row_number() OVER (PARTITION BY job_id ORDER BY finished DESC, last_at DESC NULLS LAST, seq DESC) AS place
    FROM versions
)
SELECT job_id,
       arg_min(seq, place) AS kept_seq,                       -- the record kept: its last copy
       arg_min(is_stored, place) AS kept_stored,               -- ... which is the stored one
       bool_or(is_stored) AS had_stored,
       arg_min(copies, place) > 1 AS kept_repeated,            -- ... and this file has it too
       arg_min(finished, place) AS finished, arg_min_null(last_at, place) AS last_at, arg_min_null(digest, place) AS digest,
       count(*) - 1 AS superseded,
       sum(copies) - count(*) AS unchanged
FROM ranked GROUP BY job_id;

-- A stored record that a record of this file supersedes goes, with all it made.
DELETE FROM jobs WHERE source = 'slurm'
    AND job_id IN (SELECT job_id FROM stage_sacct_choice WHERE had_stored AND NOT kept_stored);
DELETE FROM attempts WHERE source = 'slurm'
    AND job_id IN (SELECT job_id FROM stage_sacct_choice WHERE had_stored AND NOT kept_stored);
DELETE FROM attempt_hosts WHERE source = 'slurm'
    AND job_id IN (SELECT job_id FROM stage_sacct_choice WHERE had_stored AND NOT kept_stored);
DELETE FROM sacct_records WHERE source = 'slurm'
    AND job_id IN (SELECT job_id FROM stage_sacct_choice WHERE had_stored AND NOT kept_stored);

-- The records of this file to store, and this file as a second holder of the stored ones it repeats.
INSERT INTO sacct_records (source, job_id, finished, last_at, digest, file_id)
SELECT 'slurm', job_id, finished, last_at, digest, $file_id
FROM stage_sacct_choice WHERE NOT kept_stored OR kept_repeated;

-- The allocation rows that are stored: one per run and het component, of the records kept.
-- source_index: a row's place among its job's (het component's) stored rows, by line. A window
-- over a million partitions of one row each is slow: it runs over the jobs with several.
CREATE OR REPLACE TEMP TABLE stage_sacct_alloc AS
WITH kept AS (
    SELECT a.line, a.job_id, a.het_offset, a.record_no, a.alloc_line
    FROM stage_sacct_linked a
    WHERE a.step IS NULL AND a.line NOT IN (SELECT line FROM stage_sacct_alloc_problem)
      AND a.record_no IN (SELECT kept_seq FROM stage_sacct_choice WHERE NOT kept_stored)
),
several AS (SELECT job_id, het_offset FROM kept GROUP BY job_id, het_offset HAVING count(*) > 1),
indexed AS (
    SELECT k.line, (row_number() OVER (PARTITION BY k.job_id, k.het_offset ORDER BY k.line) - 1)::INTEGER AS source_index
    FROM kept k SEMI JOIN several m ON m.job_id = k.job_id AND m.het_offset IS NOT DISTINCT FROM k.het_offset
)
SELECT s.* EXCLUDE (text, digest), k.record_no, k.alloc_line, coalesce(i.source_index, 0) AS source_index,
    t.submit_at, t.eligible_at, t.start_at, t.end_at
FROM kept k
JOIN stage_sacct s ON s.line = k.line AND s.step IS NULL
JOIN stage_sacct_alloc_time t ON t.line = k.line
LEFT JOIN indexed i ON i.line = k.line;

-- What the steps add to their run's outcome. Only real failures count: the extern step
-- (ssh sessions adopted into the job) never does, and CANCELLED/TIMEOUT steps, or a step
-- FAILED by a signal in a run that did not pass, are how Slurm tears a run down.
CREATE OR REPLACE TEMP TABLE stage_sacct_step_rank AS
SELECT s.alloc_line, max(slurm_status_rank(s.status)) AS rank
FROM stage_sacct_linked s
JOIN stage_sacct_alloc a ON a.line = s.alloc_line
WHERE s.step IS NOT NULL AND s.step <> 'extern'
  AND s.line NOT IN (SELECT line FROM stage_sacct_step_problem)
  AND (s.status = 'node_fail' OR s.state = 'OUT_OF_MEMORY'
       OR (s.status = 'failed' AND (coalesce(s.exit_code, 0) <> 0 OR a.status = 'passed')))
GROUP BY s.alloc_line;

-- One attempt per run; a het job's components of the same run are one attempt.
CREATE OR REPLACE TEMP TABLE stage_sacct_attempt AS
SELECT a.job_id, a.source_index,
    min(a.start_at) AS start_at,
    CASE WHEN count(*) FILTER (WHERE a.start_at IS NOT NULL AND a.end_at IS NULL) = 0 THEN max(a.end_at) END AS end_at,
    slurm_rank_status(max(greatest(slurm_status_rank(a.status), coalesce(r.rank, 0)))) AS status,
    arg_min(a.source_status, coalesce(a.het_offset, 0)) AS source_status,
    arg_min(a.state, coalesce(a.het_offset, 0)) AS state,
    arg_min(a.exit_code, coalesce(a.het_offset, 0)) AS exit_code,
    arg_min(a.exit_signal, coalesce(a.het_offset, 0)) AS exit_signal,
    arg_min(a.line, coalesce(a.het_offset, 0)) AS leader_line,
    sum(a.gpus)::DOUBLE AS num_gpus,
    sum(a.req_gpus)::DOUBLE AS req_gpus,
    sum(a.nnodes)::INTEGER AS num_nodes,
    -- a row with neither a start nor a node (cancelled or deleted while pending: Start None,
    -- or = End, which the reader clears, and `None assigned`; or still pending at the dump)
    -- was never placed: no attempt. Its End is when the job left the queue. A dump without
    -- a Start column cannot tell: its rows are runs.
    (min(a.start_at) IS NOT NULL OR coalesce(sum(a.hosts), 0) > 0 OR bool_or(a.start_unknown)) AS placed,
    max(coalesce(a.end_at, a.start_at)) AS left_at
FROM stage_sacct_alloc a
LEFT JOIN stage_sacct_step_rank r ON r.alloc_line = a.line
GROUP BY a.job_id, a.source_index;

-- run_order: every row of the job in time (its last gives the job's status); attempt_no:
-- the placed runs only, 0-based.
CREATE OR REPLACE TEMP TABLE stage_sacct_attempt_no AS
SELECT *,
       (row_number() OVER (PARTITION BY job_id ORDER BY start_at ASC NULLS LAST, source_index) - 1)::INTEGER AS run_order,
       CASE WHEN placed THEN (row_number() OVER (PARTITION BY job_id, placed ORDER BY start_at ASC NULLS LAST, source_index)
                              - 1)::INTEGER END AS attempt_no
FROM stage_sacct_attempt;

-- requested_gpus: the request (ReqTRES, else AllocTRES) of the job's last run, its het
-- components summed, as the jobs row takes the rest of that run's leader row.
INSERT INTO jobs (source, job_id, user_name, vc, status, source_status, submit_at, file_id,
                  job_name, partition, eligible_at, time_limit_s, gpu_model, exit_code, exit_signal, cancelled_by,
                  requested_gpus, left_queue_at, qos)
WITH last_attempt AS (
    SELECT job_id, arg_max(leader_line, run_order) AS line, arg_max(status, run_order) AS status,
           arg_max(state, run_order) AS state, arg_max(req_gpus, run_order) AS req_gpus,
           arg_max(CASE WHEN NOT placed THEN left_at END, run_order) AS left_queue_at
    FROM stage_sacct_attempt_no GROUP BY job_id
),
per_job AS (
    SELECT job_id, min(submit_at) AS submit_at, min(eligible_at) AS eligible_at,
           string_agg(DISTINCT gpu_model, ',' ORDER BY gpu_model) AS gpu_model
    FROM stage_sacct_alloc GROUP BY job_id
)
SELECT 'slurm', l.job_id, a.user_name, coalesce(a.account, a.partition),
       -- a job whose last run was requeued is waiting again
       CASE WHEN l.state IN ('REQUEUED', 'REQUEUE_FED', 'REQUEUE_HOLD', 'SPECIAL_EXIT') THEN 'pending' ELSE l.status END,
       a.source_status, p.submit_at, $file_id,
       a.job_name, a.partition, p.eligible_at, a.time_limit_s, p.gpu_model, a.exit_code, a.exit_signal, a.cancelled_by,
       l.req_gpus, l.left_queue_at, a.qos
FROM last_attempt l
JOIN stage_sacct_alloc a ON a.line = l.line
JOIN per_job p ON p.job_id = l.job_id;

INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, file_id,
                      status, source_status, exit_code, exit_signal, num_gpus, num_nodes)
SELECT 'slurm', job_id, attempt_no, source_index, start_at, end_at, $file_id,
       status, source_status, exit_code, exit_signal, num_gpus, num_nodes
FROM stage_sacct_attempt_no
WHERE placed;

-- GPUs per host: a component's GPUs spread evenly over its hosts when they divide evenly.
INSERT INTO attempt_hosts (source, job_id, attempt_no, machine_id, gpus, file_id)
SELECT 'slurm', a.job_id, n.attempt_no, h.machine_id,
       CASE WHEN count(*) = count(share) THEN sum(share)::INTEGER END, $file_id
FROM (
    SELECT h.line, h.machine_id,
           CASE WHEN a.gpus IS NOT NULL AND a.hosts > 0 AND a.gpus % a.hosts = 0 THEN a.gpus // a.hosts END AS share
    FROM stage_sacct_host h JOIN stage_sacct_alloc a USING (line)
) h
JOIN stage_sacct_alloc a USING (line)
JOIN stage_sacct_attempt_no n ON n.job_id = a.job_id AND n.source_index = a.source_index
GROUP BY a.job_id, n.attempt_no, h.machine_id;
