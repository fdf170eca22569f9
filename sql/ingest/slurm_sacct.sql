-- Load one sacct dump into jobs, attempts and attempt_hosts.
-- Parameters: $file_id, $zone (the zone of sacct's naive times), and the sanity bounds
-- $max_gpus_per_node, $gpu_bound, $max_nodes_per_job, $node_bound (gpucluster_analysis/bounds.py).
-- Needs the tables staged by gpucluster_analysis/ingest/slurm/staging.py (`text` only where a line was
-- read line by line: rejects of the other rows get theirs from slurm/sacct.py afterwards):
--   stage_sacct_allocs  one row per allocation line: the parsed job id (job_id with the array
--                       task, het_offset), fields, `problem` when the line is unreadable;
--                       block_no, its block (slurm/link.py), and `alone`: the only allocation
--                       row of its job in the file (one block, one allocation row: nearly
--                       every job of a busy site), for which the windows and groups below that
--                       choose between a job's rows are skipped;
--   stage_sacct_steps   one row per step line: job id, State, ExitCode, problem, and
--                       alloc_line, the allocation row above it in its block and het component;
--   stage_sacct_unread  (line, problem, text) of the lines without a readable job id;
--   stage_sacct_blocks  (block_no, job_id, dump, allocs, digests, once): a block is a job's run
--                       of consecutive lines (a repeated header starts a new one); `digests`
--                       the md5 of each of its lines as staged, one after the other; `once`:
--                       no other block of the file has its job (allocation rows carry their
--                       block's `digests`);
--   stage_sacct_host    (line, machine_id): the expanded NodeList of allocation rows;
--   stage_sacct_alloc_time, stage_sacct_zone: the UTC times of the allocation rows, made by
--                       slurm_sacct_times.sql.
-- Rules (docs/schema.md, "Reading Slurm"): a job's lines in one dump are one record of it,
-- but for a block of them that lists a run again (a concatenation of dumps repeats a job in
-- another block); a step belongs to the nearest allocation row above it in its block; each allocation row of a record is a run (requeue),
-- but rows of a record with the same Submit and Start are one run (the last is kept); het
-- components with the same position among their component's rows form one attempt.
-- Of a job's records, in this file and in the store (sacct_records), one is kept: a finished
-- one before an unfinished one, then the one naming the latest time (End), then the later
-- (stored before this file, earlier lines before later ones); an identical record changes nothing.

-- Each allocation row with its record (record_no). sacct -D lists each run of a requeued job
-- where its own Submit falls among the other jobs' (Slurm 22.05), so a job's later block in
-- the same dump continues its record, unless it lists a run seen in an earlier block (an
-- allocation row with the same Submit, or one without Submit, which cannot tell): then it is
-- another copy of the job, as in dumps concatenated without their header. record_no is the
-- record's first block. Only jobs met in more than one block of a dump need this (few:
-- requeues and repeats); the others' record is their block.
CREATE OR REPLACE TEMP TABLE stage_sacct_split_record AS
WITH split AS (
    SELECT job_id, dump FROM stage_sacct_blocks WHERE NOT once GROUP BY job_id, dump HAVING count(*) > 1
),
split_blocks AS (
    SELECT b.job_id, b.dump, b.block_no
    FROM stage_sacct_blocks b SEMI JOIN split s ON s.job_id = b.job_id AND s.dump IS NOT DISTINCT FROM b.dump
),
block_runs AS (
    SELECT b.job_id, b.dump, b.block_no,
           list(DISTINCT a.submit_t) FILTER (WHERE a.submit_t IS NOT NULL) AS submits,
           bool_or(a.line IS NOT NULL AND a.submit_t IS NULL) AS unkeyed
    FROM split_blocks b LEFT JOIN stage_sacct_allocs a ON a.block_no = b.block_no
    GROUP BY b.job_id, b.dump, b.block_no
),
copies AS (
    SELECT b.job_id, b.dump, b.block_no, count(e.block_no) AS copy_no
    FROM block_runs b LEFT JOIN block_runs e
      ON e.job_id = b.job_id AND e.dump IS NOT DISTINCT FROM b.dump AND e.block_no < b.block_no
     AND (b.unkeyed OR e.unkeyed OR list_has_any(e.submits, b.submits))
    GROUP BY b.job_id, b.dump, b.block_no
)
SELECT block_no, min(block_no) OVER (PARTITION BY job_id, dump, copy_no) AS record_no FROM copies;

-- The allocation rows with their record (a view: the join is with the few split blocks).
CREATE OR REPLACE TEMP VIEW stage_sacct_linked AS
SELECT a.*, coalesce(r.record_no, a.block_no) AS record_no
FROM stage_sacct_allocs a LEFT JOIN stage_sacct_split_record r USING (block_no);

-- Why an allocation row cannot be stored; its own reason first, then its record's.
CREATE OR REPLACE TEMP TABLE stage_sacct_alloc_problem AS
WITH
-- A record repeating a run: the last row is the newest word on it. (Repeated records of a job
-- are chosen between below, not rejected.) A dump without Submit and Start cannot tell a
-- repeat from a requeued run: its rows are taken as sacct -D prints them, one run each.
-- A job's only allocation row repeats nothing.
repeats AS (
    SELECT line, max(line) OVER (PARTITION BY record_no, het_offset, submit_t, start_t) AS last_line
    FROM stage_sacct_linked WHERE NOT alone AND problem IS NULL AND (submit_t IS NOT NULL OR start_t IS NOT NULL)
),
own AS (
    SELECT line, problem AS reason FROM stage_sacct_allocs WHERE problem IS NOT NULL
    UNION ALL
    SELECT line, disorder || ' (times out of order)' FROM stage_sacct_alloc_time WHERE disorder IS NOT NULL
    UNION ALL
    -- counts no node holds (bounds.py): a typo or hostile input, which would be most of the
    -- report's GPUs or GPU-hours
    SELECT line,
           CASE WHEN nnodes > $max_nodes_per_job THEN nnodes || ' nodes' || $node_bound
                WHEN gca_gpus_over(gpus, nnodes, $max_gpus_per_node) THEN gpus || ' GPUs' || gca_on_nodes(nnodes) || $gpu_bound
                ELSE req_gpus || ' GPUs requested' || gca_on_nodes(nnodes) || $gpu_bound END
    FROM stage_sacct_allocs
    WHERE problem IS NULL AND (nnodes > $max_nodes_per_job OR gca_gpus_over(gpus, nnodes, $max_gpus_per_node)
                               OR gca_gpus_over(req_gpus, nnodes, $max_gpus_per_node))
),
-- A job's record is stored whole or not at all: without one of its rows, a requeued job
-- would lose a run (and maybe the last, which gives its status), a het job's attempt a
-- component's GPUs. So the other allocation rows of a record with a rejected row go too
-- (a job's only allocation row has none).
record_rejected AS (
    SELECT l.record_no, min(o.line) AS first_line
    FROM own o JOIN stage_sacct_linked l USING (line) WHERE NOT l.alone GROUP BY l.record_no
),
problems AS (
    SELECT line, 1 AS rank, reason FROM own
    UNION ALL
    SELECT l.line, 2, 'job ' || l.job_id || ' is rejected whole: its row at line ' || r.first_line || ' was rejected'
    FROM stage_sacct_linked l JOIN record_rejected r USING (record_no)
    WHERE NOT l.alone AND l.line <> r.first_line
    UNION ALL
    SELECT line, 3, 'same JobID, Submit and Start as line ' || last_line || ', which is kept'
    FROM repeats WHERE line < last_line
)
SELECT line, min_by(reason, (rank, reason)) AS reason FROM problems GROUP BY line;

-- A step listed twice under the same run: an aggregate finds them (few), not a window over
-- every step.
CREATE OR REPLACE TEMP TABLE stage_sacct_step_problem AS
WITH repeated AS (
    SELECT alloc_line, step, min(line) AS first_line FROM stage_sacct_steps
    WHERE problem IS NULL AND alloc_line IS NOT NULL
    GROUP BY alloc_line, step HAVING count(*) > 1
),
problems AS (
    SELECT line, problem AS reason FROM stage_sacct_steps WHERE problem IS NOT NULL
    UNION ALL
    SELECT line, 'step of job ' || job_id || coalesce('+' || het_offset, '')
                 || ' without its allocation row above it' FROM stage_sacct_steps WHERE alloc_line IS NULL
    UNION ALL
    SELECT s.line, 'step of the allocation row at line ' || s.alloc_line || ', which was rejected'
    FROM stage_sacct_steps s JOIN stage_sacct_alloc_problem p ON p.line = s.alloc_line
    WHERE s.problem IS NULL
    UNION ALL
    SELECT s.line, 'duplicate of line ' || r.first_line || ' (same step of the same run)'
    FROM stage_sacct_steps s JOIN repeated r ON r.alloc_line = s.alloc_line AND r.step = s.step
    WHERE s.problem IS NULL AND s.line > r.first_line
)
SELECT line, min_by(reason, reason) AS reason FROM problems GROUP BY line;

INSERT INTO rejects (file_id, line, reason, text)
SELECT $file_id, u.line, u.problem, u.text FROM stage_sacct_unread u
UNION ALL
SELECT $file_id, p.line, p.reason, a.text FROM stage_sacct_alloc_problem p JOIN stage_sacct_allocs a USING (line)
UNION ALL
SELECT $file_id, p.line, p.reason, s.text FROM stage_sacct_step_problem p JOIN stage_sacct_steps s USING (line);

-- Status ranks: a worse outcome ranks higher; a run still going outranks any outcome.
CREATE OR REPLACE TEMP MACRO slurm_status_rank(status) AS
    CASE status WHEN 'passed' THEN 1 WHEN 'killed' THEN 2 WHEN 'timeout' THEN 3 WHEN 'preempted' THEN 4
        WHEN 'failed' THEN 5 WHEN 'node_fail' THEN 6 WHEN 'unknown' THEN 7 WHEN 'pending' THEN 8
        WHEN 'running' THEN 9 END;

-- A record is finished when its last run is in a final state (not PENDING, RUNNING, REQUEUED ...).
CREATE OR REPLACE TEMP MACRO slurm_finished(state, status) AS
    state NOT IN ('REQUEUED', 'REQUEUE_FED', 'REQUEUE_HOLD', 'SPECIAL_EXIT')
    AND status IN ('passed', 'failed', 'node_fail', 'killed', 'timeout', 'preempted');

CREATE OR REPLACE TEMP MACRO slurm_rank_status(rank) AS
    CASE rank WHEN 1 THEN 'passed' WHEN 2 THEN 'killed' WHEN 3 THEN 'timeout' WHEN 4 THEN 'preempted'
        WHEN 5 THEN 'failed' WHEN 6 THEN 'node_fail' WHEN 7 THEN 'unknown' WHEN 8 THEN 'pending'
        WHEN 9 THEN 'running' END;

-- The jobs of this file's only allocation rows that a file before stored (a nightly dump
-- repeats a few).
CREATE OR REPLACE TEMP TABLE stage_sacct_stored_alone AS
SELECT DISTINCT r.job_id FROM sacct_records r
WHERE r.source = 'slurm' AND r.job_id IN (SELECT job_id FROM stage_sacct_allocs WHERE alone);

-- The storable allocation rows with their UTC times (a view, not a CTE read twice, which
-- DuckDB would copy whole: each statement below reads its own share). `sole`: a job's only
-- allocation row in this file, of a job no file before stored. Such a job has one record,
-- which it keeps: nearly every job of a dump (every one, in a first ingest). Its row goes
-- straight to the inserts (stage_sacct_sole), without the choice between records below,
-- which the other jobs' rows go through (stage_sacct_several ... stage_sacct_alloc). Each
-- part is filtered before the join with the times, so that a statement reading the few
-- others joins them alone.
CREATE OR REPLACE TEMP VIEW stage_sacct_good AS
WITH parts AS (
    SELECT *, true AS sole FROM stage_sacct_linked
    WHERE alone AND job_id NOT IN (SELECT job_id FROM stage_sacct_stored_alone)
    UNION ALL
    SELECT *, false FROM stage_sacct_linked
    WHERE NOT alone OR job_id IN (SELECT job_id FROM stage_sacct_stored_alone)
)
SELECT a.*, t.submit_at, t.eligible_at, t.start_at, t.end_at
FROM parts a
JOIN stage_sacct_alloc_time t USING (line)
WHERE a.line NOT IN (SELECT line FROM stage_sacct_alloc_problem);

CREATE OR REPLACE TEMP TABLE stage_sacct_several AS SELECT * FROM stage_sacct_good WHERE NOT sole;

-- Each record of a job in this file that has a storable allocation row: whether it is finished
-- (its last run, by start with a run not started last, is in a final state), the latest time
-- it names, and a digest of its lines (as staged: the first 500 characters of each) and zone.
-- A job's only allocation row is its record's last run: no window, no group. (The sole jobs'
-- records go to sacct_records as they are.)
CREATE OR REPLACE TEMP TABLE stage_sacct_record AS
WITH ranked AS (
    SELECT *, row_number() OVER (PARTITION BY record_no ORDER BY start_at DESC NULLS FIRST, line DESC) AS from_last
    FROM stage_sacct_several WHERE NOT alone
),
several AS (
    SELECT record_no, any_value(job_id) AS job_id,
           bool_or(from_last = 1 AND slurm_finished(state, status)) AS finished,
           max(greatest(submit_at, eligible_at, start_at, end_at)) AS last_at
    FROM ranked GROUP BY record_no
),
-- md5 of the record's lines' md5s (its blocks' digests, in line order): a block is its record
-- (a job's only allocation row carries its block's), the few split records join theirs
digests AS (
    SELECT b.block_no AS record_no, md5($zone || ':' || b.digests) AS digest
    FROM stage_sacct_blocks b SEMI JOIN several s ON s.record_no = b.block_no
    ANTI JOIN stage_sacct_split_record r USING (block_no)
    UNION ALL
    SELECT r.record_no, md5($zone || ':' || string_agg(b.digests, '' ORDER BY b.block_no))
    FROM stage_sacct_split_record r JOIN stage_sacct_blocks b USING (block_no)
    GROUP BY r.record_no
)
SELECT record_no, job_id, slurm_finished(state, status) AS finished,
       greatest(submit_at, eligible_at, start_at, end_at) AS last_at,
       md5($zone || ':' || digests) AS digest
FROM stage_sacct_several WHERE alone
UNION ALL
SELECT s.*, d.digest FROM several s JOIN digests d USING (record_no);

-- Per job of this file: its versions (distinct digests) among its records here and the stored
-- one, the version kept, and how many records were superseded by another version or repeated
-- one (unchanged). seq orders the records in time: the stored one 0, this file's by line.
-- (A sole job is not among them: it keeps its one record.)
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
-- (records whose lines agree in their first 500 characters share a digest but may name other
-- times past them: the latest record's are taken, not any one's)
versions AS (
    SELECT job_id, digest, max(seq) AS seq, bool_or(seq = 0) AS is_stored, count(*) AS copies,
           arg_max(finished, seq) AS finished, arg_max_null(last_at, seq) AS last_at
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

-- What the steps add to their run's outcome. Only real failures count: the extern step
-- (ssh sessions adopted into the job) never does, and CANCELLED/TIMEOUT steps, or a step
-- FAILED by a signal in a run that did not pass, are how Slurm tears a run down. (Of every
-- staged run: a run not stored is never looked up.)
CREATE OR REPLACE TEMP TABLE stage_sacct_step_rank AS
SELECT s.alloc_line, max(slurm_status_rank(s.status)) AS rank,
       max(s.exit_code) AS exit_code, max(s.exit_signal) AS exit_signal
FROM stage_sacct_steps s
JOIN stage_sacct_allocs a ON a.line = s.alloc_line
WHERE s.step <> 'extern'
  AND s.line NOT IN (SELECT line FROM stage_sacct_step_problem)
  AND (s.status = 'node_fail' OR s.state = 'OUT_OF_MEMORY'
       OR (s.status = 'failed' AND (coalesce(s.exit_code, 0) <> 0 OR a.status = 'passed')))
GROUP BY s.alloc_line;

-- What a run's steps say, as sacct's DerivedExitCode (the highest exit code of the job's steps,
-- and the signal) where the dump has it, else as the failed steps above (their highest code and
-- signal). A step's non-zero exit code makes the run failed; a signal only a run that passed (a
-- signal in a run that did not pass is how it was torn down). A run that passed by its own
-- ExitCode (0:0) but failed by a step takes the step's as its exit code and signal: what
-- jobs.csv shows and the scheduler's evidence reads (scheduler_evidence.py).
CREATE OR REPLACE TEMP MACRO slurm_step_failed(status, code, signal) AS
    coalesce(code, 0) <> 0 OR (coalesce(signal, 0) <> 0 AND status = 'passed');

-- The storable allocation rows with the columns the inserts read. run_rank: the row's status
-- with what its steps add. placed: a row with neither a start nor a node (cancelled or
-- deleted while pending: Start None, or = End, which the reader clears, and `None assigned`;
-- or still pending at the dump) was never placed: no attempt; its End is when the job left
-- the queue. A dump without a Start column cannot tell: its rows are runs. (A view: the sole
-- rows are read from it once, into stage_sacct_sole, and the others' kept rows into
-- stage_sacct_alloc.)
CREATE OR REPLACE TEMP VIEW stage_sacct_run AS
WITH derived AS (
    SELECT a.*, r.rank AS step_rank,
           coalesce(a.derived_exit_code, r.exit_code) AS step_code,
           coalesce(a.derived_exit_signal, r.exit_signal) AS step_signal
    FROM stage_sacct_good a LEFT JOIN stage_sacct_step_rank r ON r.alloc_line = a.line
)
SELECT a.line, a.job_id, a.het_offset, a.alone, a.state, a.status, a.source_status,
       CASE WHEN by_step THEN a.step_code ELSE a.exit_code END AS exit_code,
       CASE WHEN by_step THEN a.step_signal ELSE a.exit_signal END AS exit_signal,
       a.gpus, a.req_gpus, a.nnodes, a.hosts, a.start_unknown, a.job_name, a.user_name, a.user_uid, a.account, a.partition,
       a.qos, a.time_limit_s, a.gpu_model, a.cancelled_by, a.submit_at, a.eligible_at, a.start_at, a.end_at,
       greatest(slurm_status_rank(a.status), coalesce(a.step_rank, 0),
                CASE WHEN slurm_step_failed(a.status, a.derived_exit_code, a.derived_exit_signal)
                     THEN slurm_status_rank('failed') ELSE 0 END) AS run_rank,
       (a.start_at IS NOT NULL OR coalesce(a.hosts, 0) > 0 OR a.start_unknown) AS placed,
       a.record_no, a.sole, a.digests
FROM (
    SELECT *, status = 'passed' AND coalesce(exit_code, 0) = 0 AND coalesce(exit_signal, 0) = 0
              AND slurm_step_failed(status, step_code, step_signal) AS by_step
    FROM derived
) a;

-- The sole jobs' rows, with their records (finished, the latest time named, the digest of the
-- block's lines: see stage_sacct_record).
CREATE OR REPLACE TEMP TABLE stage_sacct_sole AS
SELECT * EXCLUDE (record_no, sole, digests), 0 AS source_index, slurm_finished(state, status) AS finished,
       greatest(submit_at, eligible_at, start_at, end_at) AS last_at, md5($zone || ':' || digests) AS digest
FROM stage_sacct_run WHERE sole;

-- The records of this file to store, and this file as a second holder of the stored ones it repeats.
INSERT INTO sacct_records (source, job_id, finished, last_at, digest, file_id)
SELECT 'slurm', job_id, finished, last_at, digest, $file_id
FROM stage_sacct_choice WHERE NOT kept_stored OR kept_repeated
UNION ALL
SELECT 'slurm', job_id, finished, last_at, digest, $file_id FROM stage_sacct_sole;

-- The other jobs' allocation rows that are stored: one per run and het component, of the
-- records kept. source_index: a row's place among its job's (het component's) stored rows,
-- by line; a job's only allocation row is its first.
CREATE OR REPLACE TEMP TABLE stage_sacct_alloc AS
WITH kept AS (
    SELECT * EXCLUDE (record_no, sole, digests) FROM stage_sacct_run
    WHERE NOT sole AND record_no IN (SELECT kept_seq FROM stage_sacct_choice WHERE NOT kept_stored)
),
several AS (SELECT job_id, het_offset FROM kept WHERE NOT alone GROUP BY job_id, het_offset HAVING count(*) > 1),
indexed AS (
    SELECT k.line, (row_number() OVER (PARTITION BY k.job_id, k.het_offset ORDER BY k.line) - 1)::INTEGER AS source_index
    FROM kept k SEMI JOIN several m ON m.job_id = k.job_id AND m.het_offset IS NOT DISTINCT FROM k.het_offset
)
SELECT k.*, coalesce(i.source_index, 0) AS source_index
FROM kept k LEFT JOIN indexed i USING (line);

-- The allocation rows that are their job's only run: the kept ones of stored jobs, and every sole one.
CREATE OR REPLACE TEMP VIEW stage_sacct_alone_alloc AS
SELECT * FROM stage_sacct_alloc WHERE alone
UNION ALL
SELECT * EXCLUDE (finished, last_at, digest) FROM stage_sacct_sole;

-- One attempt per run of a job with several allocation rows (a job's only allocation row is
-- its only run: the inserts take it as it is); a het job's components of the same run are
-- one attempt, placed when one of them was.
CREATE OR REPLACE TEMP TABLE stage_sacct_attempt AS
SELECT a.job_id, a.source_index,
    min(a.start_at) AS start_at,
    CASE WHEN count(*) FILTER (WHERE a.start_at IS NOT NULL AND a.end_at IS NULL) = 0 THEN max(a.end_at) END AS end_at,
    slurm_rank_status(max(a.run_rank)) AS status,
    -- the leader: het component 0, else the first line (a plain row and a `+0` row of one run
    -- tie on the component; the line settles it, whatever order the scan gives)
    arg_min(a.source_status, (coalesce(a.het_offset, 0), a.line)) AS source_status,
    arg_min(a.state, (coalesce(a.het_offset, 0), a.line)) AS state,
    -- the exit of the first component that has one (a het component's failed step)
    arg_min(a.exit_code, (coalesce(a.exit_code, 0) = 0 AND coalesce(a.exit_signal, 0) = 0,
                          coalesce(a.het_offset, 0), a.line)) AS exit_code,
    arg_min(a.exit_signal, (coalesce(a.exit_code, 0) = 0 AND coalesce(a.exit_signal, 0) = 0,
                            coalesce(a.het_offset, 0), a.line)) AS exit_signal,
    arg_min(a.line, (coalesce(a.het_offset, 0), a.line)) AS leader_line,
    sum(a.gpus)::DOUBLE AS num_gpus,
    sum(a.req_gpus)::DOUBLE AS req_gpus,
    sum(a.nnodes)::INTEGER AS num_nodes,
    bool_or(a.placed) AS placed,
    max(coalesce(a.end_at, a.start_at)) AS left_at
FROM stage_sacct_alloc a
WHERE NOT a.alone
GROUP BY a.job_id, a.source_index;

-- run_order: every run of the job in time (its last gives the job's status); attempt_no:
-- the placed runs only, 0-based.
CREATE OR REPLACE TEMP TABLE stage_sacct_attempt_no AS
SELECT *,
       (row_number() OVER (PARTITION BY job_id ORDER BY start_at ASC NULLS LAST, source_index) - 1)::INTEGER AS run_order,
       CASE WHEN placed THEN (row_number() OVER (PARTITION BY job_id, placed ORDER BY start_at ASC NULLS LAST, source_index)
                              - 1)::INTEGER END AS attempt_no
FROM stage_sacct_attempt;

-- requested_gpus: the request (ReqTRES, else AllocTRES) of the job's last run, its het
-- components summed, as the jobs row takes the rest of that run's leader row. A job of one
-- allocation row is that row (the first SELECT: no group, no join); a job whose last run
-- was requeued is waiting again.
INSERT INTO jobs (source, job_id, user_name, vc, status, source_status, submit_at, file_id,
                  job_name, partition, eligible_at, time_limit_s, gpu_model, exit_code, exit_signal, cancelled_by,
                  requested_gpus, left_queue_at, qos, user_uid)
WITH last_attempt AS (
    SELECT job_id, arg_max(leader_line, run_order) AS line, arg_max(status, run_order) AS status,
           arg_max(exit_code, run_order) AS exit_code, arg_max(exit_signal, run_order) AS exit_signal,
           arg_max(state, run_order) AS state, arg_max(req_gpus, run_order) AS req_gpus,
           arg_max(CASE WHEN NOT placed THEN left_at END, run_order) AS left_queue_at
    FROM stage_sacct_attempt_no GROUP BY job_id
),
per_job AS (
    SELECT job_id, min(submit_at) AS submit_at, min(eligible_at) AS eligible_at,
           string_agg(DISTINCT gpu_model, ',' ORDER BY gpu_model) AS gpu_model
    FROM stage_sacct_alloc WHERE NOT alone GROUP BY job_id
)
SELECT 'slurm', a.job_id, a.user_name, coalesce(a.account, a.partition),
       CASE WHEN a.state IN ('REQUEUED', 'REQUEUE_FED', 'REQUEUE_HOLD', 'SPECIAL_EXIT') THEN 'pending'
            ELSE slurm_rank_status(a.run_rank) END,
       a.source_status, a.submit_at, $file_id,
       a.job_name, a.partition, a.eligible_at, a.time_limit_s, a.gpu_model, a.exit_code, a.exit_signal, a.cancelled_by,
       a.req_gpus::DOUBLE, CASE WHEN NOT a.placed THEN coalesce(a.end_at, a.start_at) END, a.qos, a.user_uid
FROM stage_sacct_alone_alloc a
UNION ALL
SELECT 'slurm', l.job_id, a.user_name, coalesce(a.account, a.partition),
       CASE WHEN l.state IN ('REQUEUED', 'REQUEUE_FED', 'REQUEUE_HOLD', 'SPECIAL_EXIT') THEN 'pending' ELSE l.status END,
       a.source_status, p.submit_at, $file_id,
       a.job_name, a.partition, p.eligible_at, a.time_limit_s, p.gpu_model, l.exit_code, l.exit_signal, a.cancelled_by,
       l.req_gpus, l.left_queue_at, a.qos, a.user_uid
FROM last_attempt l
JOIN stage_sacct_alloc a ON a.line = l.line
JOIN per_job p ON p.job_id = l.job_id;

INSERT INTO attempts (source, job_id, attempt_no, source_index, start_at, end_at, file_id,
                      status, source_status, exit_code, exit_signal, num_gpus, num_nodes)
SELECT 'slurm', job_id, 0, source_index, start_at, end_at, $file_id,
       slurm_rank_status(run_rank), source_status, exit_code, exit_signal, gpus::DOUBLE, nnodes::INTEGER
FROM stage_sacct_alone_alloc
WHERE placed
UNION ALL
SELECT 'slurm', job_id, attempt_no, source_index, start_at, end_at, $file_id,
       status, source_status, exit_code, exit_signal, num_gpus, num_nodes
FROM stage_sacct_attempt_no
WHERE placed;

-- GPUs per host: a component's GPUs spread evenly over its hosts when they divide evenly.
CREATE OR REPLACE TEMP MACRO slurm_host_share(gpus, hosts) AS
    CASE WHEN gpus IS NOT NULL AND hosts > 0 AND gpus % hosts = 0 THEN gpus // hosts END;

-- A job's only allocation row is its attempt 0 (a row with hosts was placed), each of its hosts
-- once (expand_hostlist names a host once); the other rows' shares are summed per attempt and
-- host (het components of one run on one node).
INSERT INTO attempt_hosts (source, job_id, attempt_no, machine_id, gpus, file_id)
SELECT 'slurm', a.job_id, 0, h.machine_id, slurm_host_share(a.gpus, a.hosts)::INTEGER, $file_id
FROM stage_sacct_host h JOIN stage_sacct_alone_alloc a USING (line)
UNION ALL
SELECT 'slurm', a.job_id, n.attempt_no, h.machine_id,
       CASE WHEN count(*) = count(slurm_host_share(a.gpus, a.hosts)) THEN sum(slurm_host_share(a.gpus, a.hosts))::INTEGER END,
       $file_id
FROM stage_sacct_host h
JOIN stage_sacct_alloc a USING (line)
JOIN stage_sacct_attempt_no n ON n.job_id = a.job_id AND n.source_index = a.source_index
WHERE NOT a.alone
GROUP BY a.job_id, n.attempt_no, h.machine_id;
