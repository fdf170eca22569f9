-- failure_categories: failed attempts (trials) per failure category (infrastructure,
-- framework, user, unknown = a log that shows a failure no signature names, 'no cause in the
-- log' = a log that shows no failure at all, 'no log'; failure_label and their order
-- failure_category_order(), of failure_categories.py).
-- Needs the temp table failure_trials. Parameters: none.
-- Output: category, trials, trials_pct, jobs (distinct jobs with a trial of this category),
-- jobs_pct (of the jobs with a failed attempt; does not sum to 100), gpu_hours_lost,
-- gpu_time_lost_pct, rtf_p50_s (runtime to failure).
-- Stage: result
WITH labelled AS (
    SELECT source, job_id, gpu_time_lost_s, runtime_to_failure_s,
           failure_label(has_evidence, reason, category) AS category
    FROM failure_trials
),
totals AS (
    SELECT count(*) AS trials, count(DISTINCT (source, job_id)) AS jobs, sum(gpu_time_lost_s) AS lost_s
    FROM labelled
)
SELECT l.category,
       count(*) AS trials,
       100.0 * count(*) / any_value(t.trials) AS trials_pct,
       count(DISTINCT (l.source, l.job_id)) AS jobs,
       100.0 * count(DISTINCT (l.source, l.job_id)) / any_value(t.jobs) AS jobs_pct,
       coalesce(sum(l.gpu_time_lost_s), 0) / 3600.0 AS gpu_hours_lost,
       100.0 * coalesce(sum(l.gpu_time_lost_s), 0) / nullif(any_value(t.lost_s), 0) AS gpu_time_lost_pct,
       quantile_cont(l.runtime_to_failure_s, 0.5) AS rtf_p50_s
FROM labelled l, totals t
GROUP BY l.category
ORDER BY list_position(failure_category_order(), l.category) NULLS LAST, l.category
