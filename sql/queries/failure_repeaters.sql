-- failure_repeaters: the jobs and users that failed most often for the same classified reason
-- (2+ trials of one reason), the $top_repeaters of each scope by trials.
-- Needs the temp table failure_trials.
-- Parameters: $top_repeaters (INTEGER): rows per scope.
-- Output: scope ('job', 'user'), source, who (job_id or user), reason, category, trials,
-- jobs (distinct jobs of those trials), gpu_hours_lost, rtf_p50_s, first_failure_at,
-- last_failure_at (attempt ends, UTC).
-- Stage: result
WITH pairs AS (
    SELECT 'job' AS scope, source, job_id AS who, reason, any_value(category) AS category,
           count(*) AS trials, count(DISTINCT job_id) AS jobs,
           coalesce(sum(gpu_time_lost_s), 0) / 3600.0 AS gpu_hours_lost,
           quantile_cont(runtime_to_failure_s, 0.5) AS rtf_p50_s,
           min(end_at) AS first_failure_at, max(end_at) AS last_failure_at
    FROM failure_trials
    WHERE has_evidence AND reason NOT IN ('unknown', 'none')
    GROUP BY source, job_id, reason
    UNION ALL
    SELECT 'user', source, "user", reason, any_value(category),
           count(*), count(DISTINCT job_id),
           coalesce(sum(gpu_time_lost_s), 0) / 3600.0,
           quantile_cont(runtime_to_failure_s, 0.5),
           min(end_at), max(end_at)
    FROM failure_trials
    WHERE has_evidence AND reason NOT IN ('unknown', 'none') AND "user" IS NOT NULL
    GROUP BY source, "user", reason
),
ranked AS (
    SELECT *, row_number() OVER (PARTITION BY scope ORDER BY trials DESC, gpu_hours_lost DESC, source, who, reason) AS rank
    FROM pairs
    WHERE trials >= 2
)
SELECT scope, source, who, reason, category, trials, jobs, gpu_hours_lost, rtf_p50_s, first_failure_at, last_failure_at
FROM ranked
WHERE rank <= $top_repeaters
ORDER BY scope, rank
