-- wait_causes_by_size: why jobs waited, by job size. Each job's first wait (queue start ->
-- first start) is split by the replay into the causes of wait_causes.py (temp table
-- wait_cause_totals); weighted by the job's GPUs it is waiting GPU-time.
-- Started jobs only (waits of jobs that never started: wait_abandoned); GPU jobs only (a
-- job with zero or unknown GPUs gets no split). Fragmentation is unknown (counted 0) for
-- sources that name no machines.
-- Needs the temp table wait_cause_totals (by size bucket, among others).
-- Parameters: none.
-- Output: size_bucket ('all' first, then job_keys' buckets), size_order (0 for all), cause,
-- cause_order (0..4), jobs (jobs with a split in the bucket), wait_hours, wait_gpu_hours,
-- share_pct (of the bucket's waiting GPU-time).
-- Stage: result
WITH w AS (
    SELECT size_bucket, size_order, cause, cause_order, jobs, wait_s, wait_gpu_s FROM wait_cause_totals
    WHERE started
),
summed AS (
    SELECT size_bucket, size_order, cause, cause_order, CAST(sum(jobs) AS BIGINT) AS jobs, sum(wait_s) AS wait_s,
           sum(wait_gpu_s) AS wait_gpu_s
    FROM w GROUP BY size_bucket, size_order, cause, cause_order
    UNION ALL
    SELECT 'all', 0, cause, cause_order, CAST(sum(jobs) AS BIGINT), sum(wait_s), sum(wait_gpu_s)
    FROM w GROUP BY cause, cause_order
)
SELECT size_bucket, size_order, cause, cause_order, jobs,
       CAST(wait_s AS DOUBLE) / 3600.0 AS wait_hours,
       CAST(wait_gpu_s AS DOUBLE) / 3600.0 AS wait_gpu_hours,
       100.0 * CAST(wait_gpu_s AS DOUBLE) / nullif(CAST(sum(wait_gpu_s) OVER (PARTITION BY size_bucket) AS DOUBLE), 0) AS share_pct
FROM summed
ORDER BY size_order, cause_order
