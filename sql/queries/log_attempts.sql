-- log_attempts: the attempt each job log (a row of job_logs) belongs to, the one mapping
-- attempt_failures (root causes) and attempt_speeds (training speed) share.
-- A log belongs to a job by job_id alone (job_logs has no source column); a job_id held by
-- more than one source gets no logs (attaching them to the wrong job would be worse than
-- none; failure_log_matching counts such files). attempt_ref is attempts.source_index;
-- NULL means the job's final attempt: the last in time, ordered by start, or by end for an
-- attempt that never started (a launch failure: attempt_no puts it last although it came
-- first), attempts with neither time last, ties by attempt_no.
-- Parameters: none.
-- Output: every column of job_logs, with the source and attempt_no of the attempt the row
-- belongs to (rows that map to no attempt are left out).
-- Only jobs that have logs are ranked (a store of a million jobs may have none).
-- Stage: selected
WITH logged AS (
    SELECT DISTINCT job_id FROM job_logs
),
ordered AS (
    SELECT source, job_id, attempt_no, source_index,
           row_number() OVER (PARTITION BY source, job_id
                              ORDER BY coalesce(start_at, end_at) DESC NULLS FIRST, attempt_no DESC) AS from_last
    FROM attempts SEMI JOIN logged USING (job_id)
),
single_source AS (
    SELECT job_id, min(source) AS source FROM jobs SEMI JOIN logged USING (job_id)
    GROUP BY job_id HAVING count(DISTINCT source) = 1
),
logs AS (
    SELECT u.source, l.*
    FROM job_logs l JOIN single_source u USING (job_id)
)
-- Two equi-joins instead of one OR-join, which DuckDB cannot hash.
SELECT l.*, o.attempt_no
FROM logs l JOIN ordered o ON o.source = l.source AND o.job_id = l.job_id AND o.source_index = l.attempt_ref
UNION ALL
SELECT l.*, o.attempt_no
FROM logs l JOIN ordered o ON o.source = l.source AND o.job_id = l.job_id AND o.from_last = 1
WHERE l.attempt_ref IS NULL
