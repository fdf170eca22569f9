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
-- The final attempt is the last in time: ordered by start, or by end for an attempt that
-- never started (a launch failure: attempt_no puts it last although it came first), attempts
-- with neither time last, ties by attempt_no.
-- Logs map to attempts as the temp table log_attempts says (by job_id; attempt_ref, else
-- the final attempt; a job_id held by several sources gets none). An attempt's root cause is the highest-priority
-- classification among its files; ties: a matched signature before unknown (failure evidence
-- that no signature names) before none (no failure in the log), stderr before combined before
-- stdout, then the lower line number.
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
-- failure_category from: the job's final status is one of FAILURE_STATUSES and this is its
-- last failed attempt that has a log).
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
),
failed AS (
    SELECT *
    FROM classified
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
    WHERE has_log AND job_status IN ('failed', 'timeout', 'node_fail', 'preempted')
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
