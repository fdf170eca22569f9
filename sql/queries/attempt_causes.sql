-- attempt_causes: every attempt with its place among its job's (from_last: 1 = the final one)
-- and the root cause classified from its logs (table job_logs, as log_attempts maps them), for
-- attempt_failures (the attempts that failed) and jobs.csv (a killed job's final attempt).
-- The final attempt is the last in time: ordered by start, or by end for an attempt that
-- never started (a launch failure: attempt_no puts it last although it came first), attempts
-- with neither time last, ties by attempt_no.
-- An attempt's root cause is the highest-priority classification among its files; ties: a
-- matched signature before unknown (failure evidence that no signature names) before none (no
-- failure in the log), stderr before combined before stdout, then the lower line number.
-- Parameters: none.
-- Output: source, job_id, attempt_no, source_index, start_at, end_at, attempt_status (NULL:
-- the source gives only the job's), num_gpus (allocations of the attempt, else
-- attempts.num_gpus), from_last, user_name, vc, job_status, log_files, reason, category,
-- signature_id, stream, line_number, line, other_signatures (of the winning file), has_log.
-- Needs the temp table log_attempts.
-- Stage: selected
WITH sized AS (
    SELECT source, job_id, attempt_no, count(*) AS gpus
    FROM allocations
    GROUP BY source, job_id, attempt_no
),
-- Only jobs of several attempts are ranked: a job's only attempt is its final one (ranking
-- a million one-attempt jobs cost more than the rest of this query).
several AS (
    SELECT source, job_id FROM attempts GROUP BY source, job_id HAVING count(*) > 1
),
ranked_attempts AS (
    SELECT a.*,
           -- 1 = the final attempt
           row_number() OVER (PARTITION BY a.source, a.job_id
                              ORDER BY coalesce(a.start_at, a.end_at) DESC NULLS FIRST, a.attempt_no DESC)
               AS from_last
    FROM attempts a SEMI JOIN several USING (source, job_id)
    UNION ALL
    SELECT a.*, 1 FROM attempts a ANTI JOIN several USING (source, job_id)
),
ordered AS (
    SELECT a.source, a.job_id, a.attempt_no, a.source_index, a.start_at, a.end_at,
           a.status AS attempt_status,
           coalesce(CAST(s.gpus AS DOUBLE), a.num_gpus) AS num_gpus,
           a.from_last
    FROM ranked_attempts a
    LEFT JOIN sized s USING (source, job_id, attempt_no)
),
ranked AS (
    SELECT source, job_id, attempt_no, reason, category, signature_id, stream, line_number, line,
           other_signatures,
           count(*) OVER (PARTITION BY source, job_id, attempt_no) AS log_files,
           row_number() OVER (
               PARTITION BY source, job_id, attempt_no
               ORDER BY priority DESC NULLS LAST, list_position(['unknown', 'none'], reason) NULLS FIRST,
                        CASE stream WHEN 'stderr' THEN 0 WHEN 'combined' THEN 1 WHEN 'stdout' THEN 2 ELSE 3 END,
                        line_number NULLS LAST, file_id
           ) AS rank
    FROM log_attempts  -- each log with the attempt it belongs to
),
classified AS (
    SELECT o.*, j.user_name, j.vc, j.status AS job_status,
           r.log_files, r.reason, r.category, r.signature_id, r.stream, r.line_number, r.line,
           r.other_signatures, r.source IS NOT NULL AS has_log
    FROM ordered o
    JOIN jobs j USING (source, job_id)
    LEFT JOIN ranked r ON r.source = o.source AND r.job_id = o.job_id AND r.attempt_no = o.attempt_no AND r.rank = 1
)
SELECT * FROM classified
