-- wait_cause_seconds: the replay's split of each job's first wait (temp table
-- replay_job_waits) in long form, one row per (job, cause), for the wait_* report queries.
-- Only jobs with a split; fragmentation unknown (a source that names no machines) counts 0.
-- user_limit rows only for sources whose store holds per-user caps (sacctmgr): elsewhere the
-- cause does not exist, and the tables keep the four causes they had.
-- Seconds (milliseconds, as the replay rounds them) and GPUs (thousandths at the finest,
-- Alibaba's gpu_milli) are exact decimals, so that the sums over them are the same bytes on
-- every run, whatever order DuckDB's threads add them in.
-- The job's attributes the readers group by come along (joined here once per job, not once
-- per cause row by each reader: a million jobs are four or five million rows).
-- Needs the temp table job_keys (size buckets), and jobs (the selection's).
-- Parameters: none.
-- Output: source, job_id, started, gpus, cause (user_limit, fair_share, capacity, fragmentation,
-- other), cause_order (0..4: user_limit is checked first), seconds, vc (jobs.vc), status
-- (jobs.status), size_bucket, size_order (job_keys).
WITH waits AS (
    SELECT w.*, j.vc, j.status, k.size_bucket, k.size_order
    FROM replay_job_waits w
    JOIN jobs j USING (source, job_id)
    JOIN job_keys k USING (source, job_id)
    WHERE w.wait_other_s IS NOT NULL
)
SELECT source, job_id, started, CAST(gpus AS DECIMAL(18, 3)) AS gpus, cause, cause_order,
       CAST(seconds AS DECIMAL(18, 3)) AS seconds, vc, status, size_bucket, size_order
FROM (
    SELECT *, 'user_limit' AS cause, 0 AS cause_order, wait_user_limit_s AS seconds FROM waits
    WHERE source_has_user_caps
    UNION ALL SELECT *, 'fair_share', 1, wait_fair_share_s FROM waits
    UNION ALL SELECT *, 'capacity', 2, wait_capacity_s FROM waits
    UNION ALL SELECT *, 'fragmentation', 3, coalesce(wait_fragmentation_s, 0) FROM waits
    UNION ALL SELECT *, 'other', 4, wait_other_s FROM waits
)
