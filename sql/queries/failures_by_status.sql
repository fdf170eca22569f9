-- failures_by_status: what the scheduler knows about failures, per final status: jobs,
-- their attempts, how many were retried (more than one attempt), GPU time, and run time.
-- Needs the temp table job_facts. Parameters: none.
-- Output: status, jobs, jobs_pct, attempts, retried_jobs, retries (attempts beyond the first),
-- gpu_hours, gpu_time_pct, run_time_p50_s, run_time_p90_s.
-- Stage: result
SELECT status,
       count(*) AS jobs,
       100.0 * count(*) / sum(count(*)) OVER () AS jobs_pct,
       CAST(sum(attempts) AS BIGINT) AS attempts,
       count(*) FILTER (WHERE attempts > 1) AS retried_jobs,
       CAST(coalesce(sum(greatest(attempts - 1, 0)), 0) AS BIGINT) AS retries,
       coalesce(sum(gpu_time_s), 0) / 3600.0 AS gpu_hours,
       100.0 * coalesce(sum(gpu_time_s), 0) / nullif(sum(sum(gpu_time_s)) OVER (), 0) AS gpu_time_pct,
       quantile_cont(run_time_s, 0.5) AS run_time_p50_s,
       quantile_cont(run_time_s, 0.9) AS run_time_p90_s
FROM job_facts
GROUP BY status
ORDER BY jobs DESC, status
