-- failure_log_matching: where the ingested job logs (rows of job_logs) ended up. A log belongs
-- to a job by job_id alone (job_logs has no source) and to an attempt by attempt_ref
-- (attempts.source_index; NULL: the job's final attempt), as in attempt_failures.
-- Needs the temp table attempt_failures. Parameters: none.
-- Output: outcome ('failed attempt', 'attempt that did not fail', 'job in several sources',
-- 'no such job', 'no such attempt'), log_files, jobs (distinct job ids).
-- Stage: result
WITH sources AS (
    SELECT job_id, count(DISTINCT source) AS n, min(source) AS source FROM jobs GROUP BY job_id
),
resolved AS (
    SELECT l.job_id, l.attempt_ref, s.n, s.source
    FROM job_logs l
    LEFT JOIN sources s USING (job_id)
),
placed AS (
    SELECT r.job_id,
           CASE
               WHEN r.n IS NULL THEN 'no such job'
               WHEN r.n > 1 THEN 'job in several sources'
               WHEN r.attempt_ref IS NOT NULL AND a.job_id IS NULL THEN 'no such attempt'
               WHEN r.attempt_ref IS NULL AND ja.job_id IS NULL THEN 'no such attempt'
               WHEN f.job_id IS NOT NULL OR ff.job_id IS NOT NULL THEN 'failed attempt'
               ELSE 'attempt that did not fail'
           END AS outcome
    FROM resolved r
    LEFT JOIN attempts a ON a.source = r.source AND a.job_id = r.job_id AND a.source_index = r.attempt_ref
    LEFT JOIN (SELECT DISTINCT source, job_id FROM attempts) ja ON ja.source = r.source AND ja.job_id = r.job_id
    LEFT JOIN attempt_failures f
        ON f.source = r.source AND f.job_id = r.job_id AND f.source_index = r.attempt_ref
    LEFT JOIN (SELECT source, job_id FROM attempt_failures WHERE is_final_attempt) ff
        ON r.attempt_ref IS NULL AND ff.source = r.source AND ff.job_id = r.job_id
)
SELECT outcome, count(*) AS log_files, count(DISTINCT job_id) AS jobs
FROM placed
GROUP BY outcome
ORDER BY log_files DESC, outcome
