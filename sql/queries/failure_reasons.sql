-- failure_reasons: failed attempts (trials) per root cause classified from their logs, with
-- the GPU time they lost, their runtime to failure and how often a cause repeats (the
-- study's Table 6). Trials without a log are the row 'no log' (category 'no log'); a log
-- that shows a failure no signature names is reason 'unknown'; a log that shows no failure
-- at all (reason none) is the row 'no cause in the log' (category likewise).
-- Needs the temp table failure_trials. Parameters: none.
-- Output: category, reason, trials, trials_pct (of all trials), jobs (distinct jobs with at
-- least one trial of this reason: a job that failed for several reasons counts under each),
-- jobs_pct (of the jobs with a failed attempt; the column does not sum to 100), users,
-- gpu_hours_lost (runtime to failure x GPUs), gpu_time_lost_pct (of all trials' lost GPU
-- time), trials_with_runtime, rtf_p50_s, rtf_p90_s, rtf_p95_s (runtime to failure, linear
-- interpolation), job_repetition (trials per distinct job with this reason), user_repetition
-- (trials per distinct user with this reason).
-- Stage: result
WITH labelled AS (
    SELECT source, job_id, "user", gpu_time_lost_s, runtime_to_failure_s,
           failure_label(has_evidence, reason, category) AS category,
           failure_label(has_evidence, reason, reason) AS reason
    FROM failure_trials
),
totals AS (
    SELECT count(*) AS trials, count(DISTINCT (source, job_id)) AS jobs, sum(gpu_time_lost_s) AS lost_s
    FROM labelled
)
SELECT l.category, l.reason,
       count(*) AS trials,
       100.0 * count(*) / any_value(t.trials) AS trials_pct,
       count(DISTINCT (l.source, l.job_id)) AS jobs,
       100.0 * count(DISTINCT (l.source, l.job_id)) / any_value(t.jobs) AS jobs_pct,
       count(DISTINCT (l.source, l."user")) FILTER (WHERE l."user" IS NOT NULL) AS users,
       coalesce(sum(l.gpu_time_lost_s), 0) / 3600.0 AS gpu_hours_lost,
       100.0 * coalesce(sum(l.gpu_time_lost_s), 0) / nullif(any_value(t.lost_s), 0) AS gpu_time_lost_pct,
       count(l.runtime_to_failure_s) AS trials_with_runtime,
       quantile_cont(l.runtime_to_failure_s, 0.5) AS rtf_p50_s,
       quantile_cont(l.runtime_to_failure_s, 0.9) AS rtf_p90_s,
       quantile_cont(l.runtime_to_failure_s, 0.95) AS rtf_p95_s,
       count(*) / count(DISTINCT (l.source, l.job_id)) AS job_repetition,
       count(*) FILTER (WHERE l."user" IS NOT NULL)
           / nullif(count(DISTINCT (l.source, l."user")) FILTER (WHERE l."user" IS NOT NULL), 0) AS user_repetition
FROM labelled l, totals t
GROUP BY l.category, l.reason
ORDER BY trials DESC, gpu_hours_lost DESC, l.reason
