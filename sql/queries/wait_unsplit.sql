-- wait_unsplit: the jobs whose wait the replay could not split, by why (temp tables
-- replay_job_waits and job_keys), so that the Queueing section can say what it left out.
-- Parameters: none.
-- Output: why, jobs (only the reasons that occur).
-- Stage: result
WITH w AS (
    SELECT r.*, k.num_gpus, j.submit_at, j.eligible_at, j.status
    FROM replay_job_waits r JOIN job_keys k USING (source, job_id) JOIN jobs j USING (source, job_id)
    WHERE r.wait_other_s IS NULL
)
SELECT why, count(*) AS jobs FROM (
    SELECT CASE
        WHEN num_gpus IS NULL THEN 'GPU count unknown'
        WHEN num_gpus = 0 THEN 'CPU-only (0 GPUs)'
        WHEN coalesce(eligible_at, submit_at) IS NULL THEN 'no submit or eligible time'
        WHEN NOT started AND wait_s IS NULL THEN 'never started, no end time (e.g. killed in the queue)'
        WHEN wait_s IS NULL THEN 'started before its queue start'
        ELSE 'other'
    END AS why
    FROM w
)
GROUP BY why
ORDER BY jobs DESC, why
