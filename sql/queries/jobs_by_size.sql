-- jobs_by_size: jobs and GPU time by job size bucket (GPUs of the first allocated attempt,
-- else the GPUs a job never allocated asked for; job_keys.sql).
-- Needs the temp table job_facts. Parameters: none.
-- Output: size_bucket ('0', '<1', '1', '2-4', '5-8', '>8', 'unknown'), jobs, jobs_pct, gpu_hours, gpu_time_pct.
-- Stage: result
SELECT size_bucket,
       count(*) AS jobs,
       100.0 * count(*) / sum(count(*)) OVER () AS jobs_pct,
       coalesce(sum(gpu_time_s), 0) / 3600.0 AS gpu_hours,
       100.0 * coalesce(sum(gpu_time_s), 0) / nullif(sum(sum(gpu_time_s)) OVER (), 0) AS gpu_time_pct
FROM job_facts
GROUP BY size_bucket, size_order
ORDER BY size_order
