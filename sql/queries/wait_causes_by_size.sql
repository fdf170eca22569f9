-- wait_causes_by_size: why jobs waited, by job size. Each job's first wait (queue start ->
-- first start) is split by the replay (temp table replay_job_waits) into fair_share,
-- capacity, fragmentation and other; weighted by the job's GPUs it is waiting GPU-time.
-- Started jobs only (waits of jobs that never started: wait_abandoned); GPU jobs only (a
-- job with zero or unknown GPUs gets no split). Fragmentation is unknown (counted 0) for
-- sources that name no machines.
-- Needs the temp tables replay_job_waits and job_keys.
-- Parameters: none.
-- Output: size_bucket ('all' first, then job_keys' buckets), size_order (0 for all), cause,
-- cause_order (1..4), jobs (jobs with a split in the bucket), wait_hours, wait_gpu_hours,
-- share_pct (of the bucket's waiting GPU-time).
WITH w AS (
    SELECT k.size_bucket, k.size_order, r.gpus,
           r.wait_fair_share_s, r.wait_capacity_s, coalesce(r.wait_fragmentation_s, 0) AS wait_fragmentation_s,
           r.wait_other_s
    FROM replay_job_waits r JOIN job_keys k USING (source, job_id)
    WHERE r.started AND r.wait_other_s IS NOT NULL
),
scoped AS (
    SELECT size_bucket, size_order, * EXCLUDE (size_bucket, size_order) FROM w
    UNION ALL
    SELECT 'all', 0, * EXCLUDE (size_bucket, size_order) FROM w
),
long AS (
    SELECT size_bucket, size_order, 'fair_share' AS cause, 1 AS cause_order, wait_fair_share_s AS s, gpus FROM scoped
    UNION ALL SELECT size_bucket, size_order, 'capacity', 2, wait_capacity_s, gpus FROM scoped
    UNION ALL SELECT size_bucket, size_order, 'fragmentation', 3, wait_fragmentation_s, gpus FROM scoped
    UNION ALL SELECT size_bucket, size_order, 'other', 4, wait_other_s, gpus FROM scoped
),
summed AS (
    SELECT size_bucket, size_order, cause, cause_order,
           count(*) AS jobs, sum(s) / 3600.0 AS wait_hours, sum(s * gpus) / 3600.0 AS wait_gpu_hours
    FROM long GROUP BY size_bucket, size_order, cause, cause_order
)
SELECT size_bucket, size_order, cause, cause_order, jobs, wait_hours, wait_gpu_hours,
       100.0 * wait_gpu_hours / nullif(sum(wait_gpu_hours) OVER (PARTITION BY size_bucket), 0) AS share_pct
FROM summed
ORDER BY size_order, cause_order
