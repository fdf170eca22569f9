-- attempt_windows: the (machine, GPU, time window) cells of each job's attempts,
-- merged per job so that overlapping attempts of one job never count a sample twice.
-- Parameters: none. Output: source, job_id, machine_id, gpu_index, gpus, start_at, end_at:
-- the GPUs gpu_index .. gpu_index + gpus - 1 of the machine, each in the half-open window
-- [start_at, end_at). Attempts without a start or an end have no window.
-- The cells come from the temp table attempt_attribution (sql/queries/attempt_attribution.sql):
-- the scheduler's allocation where it lists GPUs, else GPU bindings or whole machines.
-- Used as a building block (CREATE TEMP TABLE ... AS) by the report.
-- A job of one attempt has one window per cell, nothing to merge, and a whole machine's GPUs
-- stay one row (readers that match samples expand them: attributed_util). Only jobs of
-- several attempts are sorted into islands (most of a busy Slurm year's million jobs have
-- one attempt): where all of a job's rows on a machine hold the same GPUs (a requeued Slurm
-- job on a node it held whole each time) as one range, else GPU by GPU.
-- Stage: every_job
WITH windows AS (
    SELECT source, job_id, machine_id, gpu_index, gpus, start_at, end_at
    FROM attempt_attribution
    WHERE gpu_index IS NOT NULL
),
retried AS (
    SELECT source, job_id FROM attempts GROUP BY source, job_id HAVING count(*) > 1
),
-- One attempt: its rows are of one kind, single GPUs or whole machines (GPUs from 0); rows
-- listed twice, or a machine listed twice with two sizes, are one window of the larger range.
single AS (
    SELECT w.source, w.job_id, w.machine_id, w.gpu_index, max(w.gpus) AS gpus, w.start_at, w.end_at
    FROM windows w ANTI JOIN retried r USING (source, job_id)
    GROUP BY w.source, w.job_id, w.machine_id, w.gpu_index, w.start_at, w.end_at
),
retried_windows AS (
    SELECT w.* FROM windows w SEMI JOIN retried r USING (source, job_id)
),
same_gpus AS (
    SELECT source, job_id, machine_id FROM retried_windows
    GROUP BY source, job_id, machine_id
    HAVING min(gpu_index) = max(gpu_index) AND min(gpus) = max(gpus)
),
to_merge AS (
    SELECT w.source, w.job_id, w.machine_id, w.gpu_index, w.gpus, w.start_at, w.end_at
    FROM retried_windows w SEMI JOIN same_gpus s USING (source, job_id, machine_id)
    UNION ALL
    SELECT DISTINCT source, job_id, machine_id, gpu_index, 1, start_at, end_at FROM (
        SELECT w.source, w.job_id, w.machine_id,
               CAST(unnest(range(w.gpu_index, w.gpu_index + w.gpus)) AS SMALLINT) AS gpu_index, w.start_at, w.end_at
        FROM retried_windows w ANTI JOIN same_gpus s USING (source, job_id, machine_id)
    )
),
ordered AS (
    SELECT *, max(end_at) OVER (
        PARTITION BY source, job_id, machine_id, gpu_index, gpus ORDER BY start_at, end_at
        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS previous_end
    FROM to_merge
),
islands AS (
    SELECT *, sum(CASE WHEN previous_end IS NULL OR start_at > previous_end THEN 1 ELSE 0 END) OVER (
        PARTITION BY source, job_id, machine_id, gpu_index, gpus ORDER BY start_at, end_at) AS island
    FROM ordered
)
SELECT source, job_id, machine_id, gpu_index, gpus, min(start_at) AS start_at, max(end_at) AS end_at
FROM islands
GROUP BY source, job_id, machine_id, gpu_index, gpus, island
UNION ALL
SELECT source, job_id, machine_id, gpu_index, gpus, start_at, end_at
FROM single
