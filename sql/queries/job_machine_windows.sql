-- job_machine_windows: the time windows in which a job held at least one GPU of a machine,
-- merged per (job, machine) from the temp table attempt_windows (per GPU), so that
-- overlapping windows of one job on one machine are one window.
-- Parameters: none.
-- Output: source, job_id, machine_id, start_at, end_at (half-open [start_at, end_at)).
WITH ordered AS (
    SELECT source, job_id, machine_id, start_at, end_at,
           max(end_at) OVER (
               PARTITION BY source, job_id, machine_id ORDER BY start_at, end_at
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS previous_end
    FROM attempt_windows
),
islands AS (
    SELECT *, sum(CASE WHEN previous_end IS NULL OR start_at > previous_end THEN 1 ELSE 0 END) OVER (
        PARTITION BY source, job_id, machine_id ORDER BY start_at, end_at) AS island
    FROM ordered
)
SELECT source, job_id, machine_id, min(start_at) AS start_at, max(end_at) AS end_at
FROM islands
GROUP BY source, job_id, machine_id, island
