-- failure_reasons: failed jobs by the root cause classified from their logs
-- (jobs.csv failure_reason / failure_category; empty until logs are classified).
-- Needs the temp table job_facts. Parameters: none.
-- Output: failure_category, failure_reason, jobs, gpu_hours.
SELECT failure_category, failure_reason,
       count(*) AS jobs,
       coalesce(sum(gpu_time_s), 0) / 3600.0 AS gpu_hours
FROM job_facts
WHERE failure_reason IS NOT NULL
GROUP BY failure_category, failure_reason
ORDER BY gpu_hours DESC, jobs DESC, failure_reason
