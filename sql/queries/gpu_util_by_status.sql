-- gpu_util_by_status: mean GPU utilization by final status over jobs with attributed samples.
-- Needs the temp table job_facts. Parameters: none.
-- Output: status, jobs, jobs_with_samples, samples, mean_util_pct (sample-weighted),
-- job_mean_util_pct, job_p50_util_pct (over per-job means).
-- Stage: result
SELECT status,
       count(*) AS jobs,
       count(*) FILTER (WHERE util_samples > 0) AS jobs_with_samples,
       CAST(sum(util_samples) AS BIGINT) AS samples,
       sum(mean_gpu_util_pct * util_samples) FILTER (WHERE util_samples > 0)
           / nullif(sum(util_samples), 0) AS mean_util_pct,
       avg(mean_gpu_util_pct) AS job_mean_util_pct,
       quantile_cont(mean_gpu_util_pct, 0.5) AS job_p50_util_pct
FROM job_facts
GROUP BY status
ORDER BY jobs DESC, status
