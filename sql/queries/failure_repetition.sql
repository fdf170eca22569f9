-- failure_repetition: how often the same root cause strikes the same job again (retries that
-- fail alike) and the same user again (across jobs): the study's repetition factor, trials
-- per distinct (job or user, reason). Over classified trials only (a log and a reason other
-- than unknown or none): an unexplained failure cannot be said to repeat.
-- Needs the temp table failure_trials. Parameters: none.
-- Output: scope ('job', 'user'), trials, pairs (distinct (job or user, reason)),
-- repetition_factor (trials / pairs), repeated_pairs (pairs with 2+ trials),
-- repeated_trials (trials in those pairs), repeated_trials_pct (of trials),
-- repeated_gpu_hours_lost (GPU time lost by the 2nd and later trials of a pair, by time).
-- Stage: result
WITH classified AS (
    SELECT source, job_id, "user", reason, gpu_time_lost_s, coalesce(start_at, end_at) AS failed_at, attempt_no
    FROM failure_trials
    WHERE has_evidence AND reason NOT IN ('unknown', 'none')
),
scoped AS (
    SELECT 'job' AS scope, source, job_id AS who, reason, gpu_time_lost_s, failed_at, attempt_no FROM classified
    UNION ALL
    SELECT 'user', source, "user", reason, gpu_time_lost_s, failed_at, attempt_no FROM classified WHERE "user" IS NOT NULL
),
numbered AS (
    SELECT *,
           row_number() OVER (PARTITION BY scope, source, who, reason ORDER BY failed_at NULLS LAST, attempt_no) AS nth,
           count(*) OVER (PARTITION BY scope, source, who, reason) AS pair_trials
    FROM scoped
)
SELECT scope,
       count(nth) AS trials,
       count(*) FILTER (WHERE nth = 1) AS pairs,
       count(nth) / nullif(count(*) FILTER (WHERE nth = 1), 0) AS repetition_factor,
       count(*) FILTER (WHERE nth = 1 AND pair_trials >= 2) AS repeated_pairs,
       count(*) FILTER (WHERE pair_trials >= 2) AS repeated_trials,
       100.0 * count(*) FILTER (WHERE pair_trials >= 2) / nullif(count(nth), 0) AS repeated_trials_pct,
       coalesce(sum(gpu_time_lost_s) FILTER (WHERE nth >= 2), 0) / 3600.0 AS repeated_gpu_hours_lost
FROM (SELECT 'job' AS scope UNION ALL SELECT 'user') scopes
LEFT JOIN numbered USING (scope)
GROUP BY scope
ORDER BY scope
