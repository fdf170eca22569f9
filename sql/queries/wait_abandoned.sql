-- wait_abandoned: the waits of jobs that never started (cancelled or killed while pending,
-- or still pending at the end of the trace), split by the replay like every first wait
-- (temp table wait_cause_totals) but counted apart: they have no queueing delay
-- (jobs.csv queue_delay_s is empty).
-- Needs the temp table wait_cause_totals (by status, among others).
-- Parameters: none.
-- Output: status (the job's final status), cause, cause_order, jobs, wait_hours, wait_gpu_hours,
-- share_pct (of all abandoned waiting GPU-time).
-- Stage: result
WITH summed AS (
    SELECT c.status, c.cause, c.cause_order, CAST(sum(c.jobs) AS BIGINT) AS jobs, sum(c.wait_s) AS wait_s,
           sum(c.wait_gpu_s) AS wait_gpu_s
    FROM wait_cause_totals c
    WHERE NOT c.started
    GROUP BY c.status, c.cause, c.cause_order
)
SELECT status, cause, cause_order, jobs,
       CAST(wait_s AS DOUBLE) / 3600.0 AS wait_hours,
       CAST(wait_gpu_s AS DOUBLE) / 3600.0 AS wait_gpu_hours,
       100.0 * CAST(wait_gpu_s AS DOUBLE) / nullif(CAST(sum(wait_gpu_s) OVER () AS DOUBLE), 0) AS share_pct
FROM summed
ORDER BY status, cause_order
