-- replay_bounds: each source's last timestamp, where the replay of queueing ends: an attempt
-- with a start and no end holds its GPUs until then, and a job still pending waits until then.
-- Parameters: none.
-- Output: source, last_at (the latest submit, start or end of the source's jobs and attempts).
-- Stage: replay
SELECT source, max(t) AS last_at FROM (
    SELECT source, submit_at AS t FROM jobs
    UNION ALL SELECT source, start_at FROM attempts
    UNION ALL SELECT source, end_at FROM attempts
)
GROUP BY source
