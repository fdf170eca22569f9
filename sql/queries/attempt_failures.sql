-- attempt_failures: one row per failed attempt (a "trial" in the study's words) with its size,
-- its runtime to failure and the root cause classified from its logs (table job_logs).
-- Which attempts failed (FAILURE_STATUSES = failed, timeout, node_fail, preempted; killed is
-- a user's or an operator's choice, not a failure):
--   * an attempt whose status the source gives (attempts.status) failed when that status is
--     one of FAILURE_STATUSES;
--   * otherwise an attempt that is not the job's final one failed (it was retried), and the
--     final one failed when the job's status is one of FAILURE_STATUSES, or when the job was
--     killed and the attempt's log names a cause other than user_kill (the attempt failed and
--     the job was killed before its retry started, or hung after the failure until killed);
--     a log that shows no failure (reason none) or none gca can name (unknown) does not.
-- Which attempt is the final one, which logs map to it and its root cause: attempt_causes.sql.
-- Parameters: none.
-- Output: source, job_id, attempt_no, source_index, user, vc, job_status, attempt_status
-- (NULL: the source gives only the job's), is_final_attempt, num_gpus (allocations of the
-- attempt, else attempts.num_gpus; NULL when neither is known), start_at, end_at,
-- runtime_to_failure_s (end - start; NULL when either is missing or end < start),
-- gpu_time_lost_s (runtime_to_failure_s x num_gpus), has_log, log_files (files mapped to the
-- attempt), reason and category (NULL without a log; 'unknown' for a log that shows a failure
-- no signature names; 'none' for a log that shows no failure at all), and of the winning file: signature_id, stream, line_number, line,
-- other_signatures (every other signature that matched in it, in precedence order),
-- job_root_cause (TRUE on the one row per job that jobs.csv takes failure_reason and
-- failure_category from, with the scheduler's evidence: the job's final status is one of
-- FAILURE_STATUSES and this is its last failed attempt that has a log; or the job was killed
-- and this is its final attempt, which failed: the failure, not an earlier retried one, is
-- why it ended).
-- Needs the temp table attempt_causes (each attempt's place and root cause, defined there).
-- Stage: selected
WITH failed AS (
    SELECT *
    FROM attempt_causes
    WHERE CASE
        WHEN attempt_status IS NOT NULL THEN attempt_status IN ('failed', 'timeout', 'node_fail', 'preempted')
        WHEN from_last = 1 THEN job_status IN ('failed', 'timeout', 'node_fail', 'preempted')
            OR (job_status = 'killed' AND coalesce(reason NOT IN ('unknown', 'none', 'user_kill'), FALSE))
        ELSE TRUE
    END
),
-- the job's last failed attempt that has a log, among those only (most have none)
root_causes AS (
    SELECT source, job_id, attempt_no FROM failed
    WHERE has_log AND (job_status IN ('failed', 'timeout', 'node_fail', 'preempted') OR job_status = 'killed' AND from_last = 1)
    QUALIFY row_number() OVER (PARTITION BY source, job_id ORDER BY from_last) = 1
)
SELECT f.source, f.job_id, f.attempt_no, f.source_index,
       f.user_name AS "user", f.vc, f.job_status, f.attempt_status,
       f.from_last = 1 AS is_final_attempt,
       f.num_gpus, f.start_at, f.end_at,
       CASE WHEN f.end_at >= f.start_at THEN epoch(f.end_at) - epoch(f.start_at) END AS runtime_to_failure_s,
       CASE WHEN f.end_at >= f.start_at THEN (epoch(f.end_at) - epoch(f.start_at)) * f.num_gpus END AS gpu_time_lost_s,
       f.has_log,
       coalesce(f.log_files, 0) AS log_files,
       f.reason, f.category, f.signature_id, f.stream, f.line_number, f.line, f.other_signatures,
       r.job_id IS NOT NULL AS job_root_cause
FROM failed f
LEFT JOIN root_causes r USING (source, job_id, attempt_no)
ORDER BY f.source, f.job_id, f.attempt_no
