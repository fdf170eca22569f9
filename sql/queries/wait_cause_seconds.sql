-- wait_cause_seconds: the replay's split of each job's first wait (temp table
-- replay_job_waits) in long form, one row per (job, cause), for the wait_* report queries.
-- Only jobs with a split; fragmentation unknown (a source that names no machines) counts 0.
-- user_limit rows only for sources whose store holds per-user caps (sacctmgr): elsewhere the
-- cause does not exist, and the tables keep the four causes they had.
-- Seconds (milliseconds, as the replay rounds them) and GPUs (thousandths at the finest,
-- Alibaba's gpu_milli) are exact decimals, so that the sums over them are the same bytes on
-- every run, whatever order DuckDB's threads add them in.
-- Parameters: none.
-- Output: source, job_id, started, gpus, cause (user_limit, fair_share, capacity, fragmentation,
-- other), cause_order (0..4: user_limit is checked first), seconds.
SELECT source, job_id, started, CAST(gpus AS DECIMAL(18, 3)) AS gpus, cause, cause_order,
       CAST(seconds AS DECIMAL(18, 3)) AS seconds
FROM (
    SELECT *, 'user_limit' AS cause, 0 AS cause_order, wait_user_limit_s AS seconds FROM replay_job_waits
    WHERE source_has_user_caps
    UNION ALL SELECT *, 'fair_share', 1, wait_fair_share_s FROM replay_job_waits
    UNION ALL SELECT *, 'capacity', 2, wait_capacity_s FROM replay_job_waits
    UNION ALL SELECT *, 'fragmentation', 3, coalesce(wait_fragmentation_s, 0) FROM replay_job_waits
    UNION ALL SELECT *, 'other', 4, wait_other_s FROM replay_job_waits
)
WHERE wait_other_s IS NOT NULL
