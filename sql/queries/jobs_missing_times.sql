-- jobs_missing_times: counts of jobs and attempts whose times or allocations are missing,
-- which leave queue delay, run time, GPU time or utilization empty in jobs.csv.
-- Parameters: none.
-- Output: one row per check: check, items ('jobs' or 'attempts'), count, total.
-- Stage: result
WITH job_attempts AS (
    SELECT j.source, j.job_id, j.submit_at,
           count(a.attempt_no) AS attempts,
           count(a.start_at) AS starts,
           count(a.end_at) AS ends
    FROM jobs j
    LEFT JOIN attempts a USING (source, job_id)
    GROUP BY j.source, j.job_id, j.submit_at
),
allocated AS (
    SELECT DISTINCT source, job_id, attempt_no FROM allocations
),
attempt_checks AS (
    SELECT count(*) AS total,
           count(*) FILTER (WHERE a.start_at IS NULL) AS no_start,
           count(*) FILTER (WHERE a.end_at IS NULL) AS no_end,
           count(*) FILTER (WHERE a.end_at < a.start_at) AS end_before_start,
           count(*) FILTER (WHERE al.job_id IS NULL) AS no_allocation
    FROM attempts a
    LEFT JOIN allocated al USING (source, job_id, attempt_no)
),
job_checks AS (
    SELECT count(*) AS total,
           count(*) FILTER (WHERE submit_at IS NULL) AS no_submit,
           count(*) FILTER (WHERE attempts = 0) AS no_attempts,
           count(*) FILTER (WHERE attempts > 0 AND starts = 0) AS no_start,
           count(*) FILTER (WHERE attempts > 0 AND ends = 0) AS no_end
    FROM job_attempts
)
SELECT * FROM (VALUES
    ('no submit time', 'jobs', (SELECT no_submit FROM job_checks), (SELECT total FROM job_checks)),
    ('no attempts', 'jobs', (SELECT no_attempts FROM job_checks), (SELECT total FROM job_checks)),
    ('attempts but no start time', 'jobs', (SELECT no_start FROM job_checks), (SELECT total FROM job_checks)),
    ('attempts but no end time', 'jobs', (SELECT no_end FROM job_checks), (SELECT total FROM job_checks)),
    ('no start time', 'attempts', (SELECT no_start FROM attempt_checks), (SELECT total FROM attempt_checks)),
    ('no end time', 'attempts', (SELECT no_end FROM attempt_checks), (SELECT total FROM attempt_checks)),
    ('end before start', 'attempts', (SELECT end_before_start FROM attempt_checks), (SELECT total FROM attempt_checks)),
    ('no GPU allocation', 'attempts', (SELECT no_allocation FROM attempt_checks), (SELECT total FROM attempt_checks))
) AS t("check", items, count, total)
