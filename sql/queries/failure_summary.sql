-- failure_summary: headline numbers of the failed attempts (trials) and of how many of them
-- the job logs explain. One row.
-- Needs the temp tables attempt_failures and job_facts. Parameters: none.
-- Output: jobs, failure_status_jobs (final status failed, timeout, node_fail or preempted),
-- jobs_with_failed_attempts, trials, trials_with_log, classified_trials (a log that names a
-- reason), unknown_trials (a log that shows a failure no signature names), no_log_trials,
-- unclassified_pct (unknown + no cause in the log + no log, % of trials), gpu_hours_lost (runtime to failure x
-- GPUs), gpu_hours (all allocated GPU time: jobs.csv gpu_time_s), gpu_time_lost_pct,
-- trials_with_runtime (both times known), rtf_p50_s, rtf_p90_s, rtf_p95_s (runtime to
-- failure), log_files (rows of job_logs, whether or not they belong to a failed attempt),
-- no_cause_trials (a log that shows no failure at all: reason none).
-- Stage: result
WITH jobs_known AS (
    SELECT count(*) AS jobs,
           count(*) FILTER (WHERE status IN ('failed', 'timeout', 'node_fail', 'preempted')) AS failure_status_jobs,
           coalesce(sum(gpu_time_s), 0) / 3600.0 AS gpu_hours
    FROM job_facts
),
trials AS (
    SELECT count(DISTINCT (source, job_id)) AS jobs_with_failed_attempts,
           count(*) AS trials,
           count(*) FILTER (WHERE has_log) AS trials_with_log,
           count(*) FILTER (WHERE has_log AND reason NOT IN ('unknown', 'none')) AS classified_trials,
           count(*) FILTER (WHERE has_log AND reason = 'unknown') AS unknown_trials,
           count(*) FILTER (WHERE NOT has_log) AS no_log_trials,
           count(*) FILTER (WHERE has_log AND reason = 'none') AS no_cause_trials,
           coalesce(sum(gpu_time_lost_s), 0) / 3600.0 AS gpu_hours_lost,
           count(runtime_to_failure_s) AS trials_with_runtime,
           quantile_cont(runtime_to_failure_s, 0.5) AS rtf_p50_s,
           quantile_cont(runtime_to_failure_s, 0.9) AS rtf_p90_s,
           quantile_cont(runtime_to_failure_s, 0.95) AS rtf_p95_s
    FROM attempt_failures
)
SELECT j.jobs, j.failure_status_jobs, t.jobs_with_failed_attempts,
       t.trials, t.trials_with_log, t.classified_trials, t.unknown_trials, t.no_log_trials,
       100.0 * (t.unknown_trials + t.no_cause_trials + t.no_log_trials) / nullif(t.trials, 0) AS unclassified_pct,
       t.gpu_hours_lost, j.gpu_hours,
       100.0 * t.gpu_hours_lost / nullif(j.gpu_hours, 0) AS gpu_time_lost_pct,
       t.trials_with_runtime, t.rtf_p50_s, t.rtf_p90_s, t.rtf_p95_s,
       (SELECT count(*) FROM job_logs) AS log_files,
       t.no_cause_trials
FROM jobs_known j, trials t
