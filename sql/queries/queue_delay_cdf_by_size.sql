-- queue_delay_cdf_by_size: the empirical CDF of queueing delay per job size bucket,
-- thinned to about 200 points per bucket (every k-th sorted job, plus first and last).
-- Needs the temp table job_facts. Parameters: none.
-- Output: size_bucket, queue_delay_s, cum_share (0..1: share of the bucket's jobs with delay <= it).
-- Stage: result
WITH ranked AS (
    SELECT size_bucket, size_order, queue_delay_s,
           row_number() OVER (PARTITION BY size_bucket ORDER BY queue_delay_s) AS rn,
           count(*) OVER (PARTITION BY size_bucket) AS n
    FROM job_facts
    WHERE queue_delay_s IS NOT NULL
)
SELECT size_bucket, queue_delay_s, rn / n AS cum_share
FROM ranked
WHERE rn = 1 OR rn = n OR rn % greatest(n // 200, 1) = 0
ORDER BY size_order, rn
