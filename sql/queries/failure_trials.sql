-- failure_trials: the failed attempts of attempt_failures with what the scheduler's record says of
-- each (issue #28, part 4; docs/domain.md, "The scheduler's evidence"): the report's failure
-- tables by reason and category read these, so that a Slurm job FAILED with exit code 1 whose log
-- shows nothing is "unknown" (a failure shown, its cause unnamed), a TIMEOUT one `time_limit`.
-- An attempt's record: its own state, exit code and signal (Slurm lists each run), else for the
-- final attempt the job's; who cancelled it, for the final attempt. attempt_failures stays the
-- log's reading (it is also the store's view attempt_root_causes, which needs no gca macros).
-- Parameters: none.
-- Output: every column of attempt_failures, with reason and category from the log and the record
-- together (macro job_failure_reason; NULL where neither says anything), and log_reason (the log's
-- alone), scheduler_reason (the record's, NULL where it says nothing), failure_evidence (log,
-- scheduler, both, none) and has_evidence (a log or the record: the tables' "no log" has neither).
-- Needs the temp table attempt_failures.
-- Stage: selected
WITH recorded AS (
    SELECT f.source, f.job_id, f.attempt_no,
           scheduler_reason(
               coalesce(a.source_status, CASE WHEN f.is_final_attempt THEN j.source_status END),
               coalesce(a.exit_code, CASE WHEN f.is_final_attempt THEN j.exit_code END),
               coalesce(a.exit_signal, CASE WHEN f.is_final_attempt THEN j.exit_signal END),
               CASE WHEN f.is_final_attempt THEN j.cancelled_by END,
               j.user_uid
           ) AS scheduler_reason
    FROM attempt_failures f
    JOIN jobs j USING (source, job_id)
    LEFT JOIN attempts a USING (source, job_id, attempt_no)
)
SELECT f.* EXCLUDE (reason, category),
       job_failure_reason(f.reason, r.scheduler_reason) AS reason,
       reason_category(job_failure_reason(f.reason, r.scheduler_reason)) AS category,
       f.reason AS log_reason,
       r.scheduler_reason,
       failure_evidence(f.reason, r.scheduler_reason) AS failure_evidence,
       f.has_log OR r.scheduler_reason IS NOT NULL AS has_evidence
FROM attempt_failures f
JOIN recorded r USING (source, job_id, attempt_no)
ORDER BY f.source, f.job_id, f.attempt_no
