-- wait_abandoned: the waits of jobs that never started (cancelled or killed while pending,
-- or still pending at the end of the trace), split by the replay like every first wait
-- but counted apart: they have no queueing delay (jobs.csv queue_delay_s is empty).
-- Needs the temp tables replay_job_waits and jobs.
-- Parameters: none.
-- Output: status (the job's final status), cause, cause_order, jobs, wait_hours, wait_gpu_hours,
-- share_pct (of all abandoned waiting GPU-time).
WITH w AS (
    SELECT j.status, r.gpus, r.wait_fair_share_s, r.wait_capacity_s,
           coalesce(r.wait_fragmentation_s, 0) AS wait_fragmentation_s, r.wait_other_s
    FROM replay_job_waits r JOIN jobs j USING (source, job_id)
    WHERE NOT r.started AND r.wait_other_s IS NOT NULL
),
long AS (
    SELECT status, 'fair_share' AS cause, 1 AS cause_order, wait_fair_share_s AS s, gpus FROM w
    UNION ALL SELECT status, 'capacity', 2, wait_capacity_s, gpus FROM w
    UNION ALL SELECT status, 'fragmentation', 3, wait_fragmentation_s, gpus FROM w
    UNION ALL SELECT status, 'other', 4, wait_other_s, gpus FROM w
),
summed AS (
    SELECT status, cause, cause_order, count(*) AS jobs, sum(s) / 3600.0 AS wait_hours,
           sum(s * gpus) / 3600.0 AS wait_gpu_hours
    FROM long GROUP BY status, cause, cause_order
)
SELECT status, cause, cause_order, jobs, wait_hours, wait_gpu_hours,
       100.0 * wait_gpu_hours / nullif(sum(wait_gpu_hours) OVER (), 0) AS share_pct
FROM summed
ORDER BY status, cause_order
