-- wait_cause_totals: the replay's split of each job's first wait (temp table
-- replay_job_waits) summed by cause per group of like jobs (started or not, status, vc, size
-- bucket), for the wait_* report queries, which sum these groups further. A row per (job,
-- cause) is summed as it is made: a million jobs make a few hundred rows here.
-- The causes, their order and columns are the macro wait_causes() (wait_causes.py, through
-- db/fact_macros.py). Only jobs with a split; fragmentation unknown (a source that names no
-- machines) counts 0. A cause that needs per-user caps (user_limit) has rows only for the
-- jobs of sources whose store holds such caps (sacctmgr): elsewhere the cause does not
-- exist, and the tables keep the causes they had.
-- Seconds (milliseconds, as the replay rounds them) and GPUs (thousandths at the finest,
-- Alibaba's gpu_milli) are exact decimals, so that the sums over them, and the sums of these
-- sums, are the same bytes on every run, whatever order DuckDB's threads add them in.
-- Needs the temp table job_keys (size buckets), and jobs (the selection's).
-- Parameters: none.
-- Output: started, status (jobs.status), vc (jobs.vc), size_bucket, size_order (job_keys),
-- cause, cause_order (0 first: wait_causes()), jobs (jobs in the group with this cause split),
-- wait_s (their seconds), wait_gpu_s (seconds x GPUs).
-- Stage: after_replay
WITH waits AS (
    SELECT w.started, j.status, j.vc, k.size_bucket, k.size_order, w.source_has_user_caps AS capped,
           CAST(w.gpus AS DECIMAL(18, 3)) AS gpus,
           CAST(coalesce(COLUMNS(lambda c: list_contains(wait_cause_columns(), c)), 0) AS DECIMAL(18, 3))
    FROM replay_job_waits w
    JOIN jobs j USING (source, job_id)
    JOIN job_keys k USING (source, job_id)
    WHERE w.wait_other_s IS NOT NULL  -- the job's wait was split
),
by_cause AS (
    UNPIVOT waits ON COLUMNS(lambda c: list_contains(wait_cause_columns(), c)) INTO NAME column_name VALUE seconds
)
SELECT b.started, b.status, b.vc, b.size_bucket, b.size_order, c.cause, c.cause_order,
       count(*) AS jobs, sum(b.seconds) AS wait_s, sum(b.seconds * b.gpus) AS wait_gpu_s
FROM by_cause b
JOIN wait_causes() c USING (column_name)
WHERE b.capped OR NOT c.needs_user_caps
GROUP BY b.started, b.status, b.vc, b.size_bucket, b.size_order, c.cause, c.cause_order
