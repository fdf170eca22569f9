-- Schema version 6: when a job that never ran left the queue, and the machines a Slurm
-- store observes in its runs' hosts. A job cancelled (or deleted)
-- while pending had no placement, so it has no attempt; the time it left the queue ends
-- its abandoned wait (sacct's row of such a job: Start None or = End, NodeList `None
-- assigned`). Idempotent: an older store is upgraded in place.

ALTER TABLE jobs ADD COLUMN IF NOT EXISTS left_queue_at TIMESTAMP;

-- Machine capacity as the data shows it (001_core.sql's view, replaced): besides the GPU
-- indices in allocations and samples, the hosts of Slurm runs (attempt_hosts), each an
-- observed machine with the most GPUs any run held there where that is known (a run's GPUs
-- divided evenly over its hosts). A Slurm store with only sacct then knows its machines.
CREATE OR REPLACE VIEW machine_capacity AS
WITH observed AS (
    SELECT machine_id, max(gpu_index) + 1 AS gpus FROM allocations GROUP BY machine_id
    UNION ALL
    SELECT machine_id, max(gpu_index) + 1 AS gpus FROM gpu_samples
    WHERE util_pct IS NOT NULL GROUP BY machine_id
    UNION ALL
    SELECT machine_id, max(gpus) AS gpus FROM attempt_hosts GROUP BY machine_id
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
FROM listed l FULL OUTER JOIN observed_max o USING (machine_id);

UPDATE schema_version SET version = getvariable('migration_version')
WHERE version < getvariable('migration_version');
