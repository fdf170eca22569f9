-- replay_pending: the scheduler's own pending reasons (Slurm squeue snapshots), to set
-- beside the replay's causes.
-- Parameters: none.
-- Output: source, job_id, observed_s (epoch seconds), reason.
-- Stage: replay
SELECT source, job_id, epoch(observed_at) AS observed_s, reason
FROM pending_reasons
ORDER BY source, job_id, observed_at
