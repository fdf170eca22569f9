-- gpu_util_by_gpus_servers: mean GPU utilization by job size (GPUs) and servers spanned,
-- over the jobs that have attributed samples (temp table job_facts).
-- mean_util_pct weighs every sample equally (sum of samples / count); job_mean_util_pct
-- weighs every job equally (mean of per-job means).
-- Parameters: none.
-- Output: num_gpus, num_servers, jobs, samples, mean_util_pct, job_mean_util_pct.
-- Stage: result
SELECT num_gpus, num_servers,
       count(*) AS jobs,
       CAST(sum(util_samples) AS BIGINT) AS samples,
       sum(mean_gpu_util_pct * util_samples) / sum(util_samples) AS mean_util_pct,
       avg(mean_gpu_util_pct) AS job_mean_util_pct
FROM job_facts
WHERE util_samples > 0 AND num_gpus IS NOT NULL
GROUP BY num_gpus, num_servers
ORDER BY num_gpus, num_servers
