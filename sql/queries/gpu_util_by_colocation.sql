-- gpu_util_by_colocation: mean GPU utilization of jobs that shared a server with another
-- job (overlapping in time on the same machine) vs jobs alone on their servers, per size bucket.
-- Needs the temp table job_facts. Parameters: none.
-- Output: size_bucket, colocation ('shared', 'alone'), jobs, samples, mean_util_pct
-- (sample-weighted), job_mean_util_pct.
-- Stage: result
SELECT size_bucket,
       CASE WHEN shares_server THEN 'shared' ELSE 'alone' END AS colocation,
       count(*) AS jobs,
       CAST(sum(util_samples) AS BIGINT) AS samples,
       sum(mean_gpu_util_pct * util_samples) / sum(util_samples) AS mean_util_pct,
       avg(mean_gpu_util_pct) AS job_mean_util_pct
FROM job_facts
WHERE util_samples > 0 AND shares_server IS NOT NULL
GROUP BY size_bucket, size_order, colocation
ORDER BY size_order, colocation DESC
