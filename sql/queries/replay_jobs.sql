-- replay_jobs: every job's waits, for the replay of queueing. The first wait runs from
-- the queue start (Eligible where the source has it, else submit: as jobs.csv
-- queue_delay_s) to the first start. A job that never started waited until its end (the
-- latest end of its attempts, or when it left the queue: jobs.left_queue_at, a job
-- cancelled while pending) or, still pending, until
-- its source's last timestamp (temp table replay_bounds); a job that never started and has
-- no end and is not pending (Philly's jobs killed in the queue) has an unknown wait_until.
-- Retry waits: the gaps between one attempt's end and the next one's start (attempts in
-- chronological order, attempt_no), negative gaps (overlapping attempts) counting 0.
-- Needs the temp tables job_keys and replay_bounds.
-- Parameters: none.
-- Output: source, job_id, vc, gpus (jobs.csv num_gpus), size_bucket, wait_from_s,
-- wait_until_s (epoch seconds; NULL: unknown), started, wait_retry_s (NULL for a job
-- that never started), user_name and qos (which per-user caps apply).
-- Stage: replay
WITH ordered AS (
    SELECT source, job_id, start_at, end_at,
           lag(end_at) OVER (PARTITION BY source, job_id ORDER BY attempt_no) AS previous_end,
           attempt_no
    FROM attempts
),
per_job AS (
    SELECT source, job_id, min(start_at) AS first_start_at, max(end_at) AS last_end_at,
           coalesce(sum(greatest(epoch(start_at) - epoch(previous_end), 0))
                        FILTER (WHERE attempt_no > 0 AND start_at IS NOT NULL AND previous_end IS NOT NULL), 0)
               AS retry_s
    FROM ordered
    GROUP BY source, job_id
)
SELECT j.source, j.job_id, j.vc, k.num_gpus AS gpus, k.size_bucket,
       epoch(coalesce(j.eligible_at, j.submit_at)) AS wait_from_s,
       epoch(CASE WHEN p.first_start_at IS NOT NULL THEN p.first_start_at
                  WHEN p.last_end_at IS NOT NULL THEN p.last_end_at
                  WHEN j.left_queue_at IS NOT NULL THEN j.left_queue_at
                  WHEN j.status = 'pending' THEN b.last_at END) AS wait_until_s,
       p.first_start_at IS NOT NULL AS started,
       CASE WHEN p.first_start_at IS NOT NULL THEN p.retry_s END AS wait_retry_s,
       j.user_name, j.qos
FROM jobs j
LEFT JOIN per_job p USING (source, job_id)
LEFT JOIN job_keys k USING (source, job_id)
LEFT JOIN replay_bounds b USING (source)
ORDER BY j.source, j.job_id
