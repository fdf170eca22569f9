-- job_machine_windows: the time windows in which a job held at least one GPU of a machine,
-- merged per (job, machine) so that overlapping windows of one job on one machine are one
-- window. The union of the job's per-GPU windows there (temp table attempt_windows) is the
-- union of the windows of its attempts with cells there (temp table attempt_attribution):
-- merged from those, one row per attempt and machine rather than per GPU. A job of one
-- attempt has one window per machine: only jobs of several are sorted into islands.
-- Parameters: none.
-- Output: source, job_id, machine_id, start_at, end_at (half-open [start_at, end_at)).
-- Stage: selected
WITH windows AS (
    SELECT DISTINCT source, job_id, machine_id, start_at, end_at
    FROM attempt_attribution
    WHERE gpu_index IS NOT NULL
),
retried AS (
    SELECT source, job_id FROM attempts GROUP BY source, job_id HAVING count(*) > 1
),
ordered AS (
    SELECT source, job_id, machine_id, start_at, end_at,
           max(end_at) OVER (
               PARTITION BY source, job_id, machine_id ORDER BY start_at, end_at
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS previous_end
    FROM windows w SEMI JOIN retried r USING (source, job_id)
),
islands AS (
    SELECT *, sum(CASE WHEN previous_end IS NULL OR start_at > previous_end THEN 1 ELSE 0 END) OVER (
        PARTITION BY source, job_id, machine_id ORDER BY start_at, end_at) AS island
    FROM ordered
)
SELECT source, job_id, machine_id, min(start_at) AS start_at, max(end_at) AS end_at
FROM islands
GROUP BY source, job_id, machine_id, island
UNION ALL
SELECT w.source, w.job_id, w.machine_id, w.start_at, w.end_at
FROM windows w ANTI JOIN retried r USING (source, job_id)
