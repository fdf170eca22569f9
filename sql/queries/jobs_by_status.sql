-- jobs_by_status: jobs and GPU time by final status (the study's Table 2).
-- Needs the temp table job_facts. Parameters: none.
-- Output: status, jobs, jobs_pct, gpu_hours, gpu_time_pct (of all jobs' GPU time).
-- Stage: result
SELECT status,
       count(*) AS jobs,
       100.0 * count(*) / sum(count(*)) OVER () AS jobs_pct,
       coalesce(sum(gpu_time_s), 0) / 3600.0 AS gpu_hours,
       100.0 * coalesce(sum(gpu_time_s), 0) / nullif(sum(sum(gpu_time_s)) OVER (), 0) AS gpu_time_pct
FROM job_facts
GROUP BY status
ORDER BY jobs DESC, status
