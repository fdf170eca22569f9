-- failure_trials_by_status: what the scheduler alone says about failed attempts (trials),
-- per final status of their job: a passed job's trials are attempts it retried after.
-- Needs the temp table attempt_failures. Parameters: none.
-- Output: status (the job's), jobs (with at least one trial), trials, trials_per_job,
-- trials_with_log, gpu_hours_lost, gpu_time_lost_pct (of all trials' lost GPU time),
-- trials_with_runtime, rtf_p50_s, rtf_p90_s, rtf_p95_s (runtime to failure).
-- Stage: result
SELECT job_status AS status,
       count(DISTINCT (source, job_id)) AS jobs,
       count(*) AS trials,
       count(*) / count(DISTINCT (source, job_id)) AS trials_per_job,
       count(*) FILTER (WHERE has_log) AS trials_with_log,
       coalesce(sum(gpu_time_lost_s), 0) / 3600.0 AS gpu_hours_lost,
       100.0 * coalesce(sum(gpu_time_lost_s), 0) / nullif(sum(sum(gpu_time_lost_s)) OVER (), 0) AS gpu_time_lost_pct,
       count(runtime_to_failure_s) AS trials_with_runtime,
       quantile_cont(runtime_to_failure_s, 0.5) AS rtf_p50_s,
       quantile_cont(runtime_to_failure_s, 0.9) AS rtf_p90_s,
       quantile_cont(runtime_to_failure_s, 0.95) AS rtf_p95_s
FROM attempt_failures
GROUP BY job_status
ORDER BY trials DESC, status
