-- machine_capacity_snapshot: listed vs observed GPUs per machine, computed once per report.
-- The same definition as the view machine_capacity (sql/schema/006_left_queue.sql): observed =
-- highest GPU index + 1 seen in allocations or in non-null GPU samples, or a Slurm run's GPUs per host, gpus = the larger
-- of listed and observed; but it takes the samples' side from the temp table
-- gpu_samples_by_machine, so that gpu_samples is not scanned once more (tests check that
-- both give the same rows).
-- Parameters: none.
-- Output: machine_id, listed_gpus, observed_gpus, gpu_memory_gb, gpus.
-- Stage: every_job
WITH observed AS (
    SELECT machine_id, max(gpu_index) + 1 AS gpus FROM allocations GROUP BY machine_id
    UNION ALL
    SELECT machine_id, observed_gpus FROM gpu_samples_by_machine WHERE observed_gpus IS NOT NULL
    UNION ALL
    -- the hosts of Slurm runs, with the most GPUs a run held there where known (schema 006)
    SELECT machine_id, max(gpus) FROM attempt_hosts GROUP BY machine_id
),
observed_max AS (
    SELECT machine_id, max(gpus) AS observed_gpus FROM observed GROUP BY machine_id
),
listed AS (
    SELECT machine_id, max(listed_gpus) AS listed_gpus, max(gpu_memory_gb) AS gpu_memory_gb
    FROM machines GROUP BY machine_id
)
SELECT
    coalesce(l.machine_id, o.machine_id) AS machine_id,
    l.listed_gpus,
    o.observed_gpus,
    l.gpu_memory_gb,
    greatest(coalesce(l.listed_gpus, 0), coalesce(o.observed_gpus, 0)) AS gpus
FROM listed l FULL OUTER JOIN observed_max o USING (machine_id)
