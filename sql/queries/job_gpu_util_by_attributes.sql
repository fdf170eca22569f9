-- job_gpu_util_by_attributes: one row per job with attributed samples: its mean GPU
-- utilization and the attributes the report tests it against (placement, servers, sharing).
-- Small (one row per job); the report runs its significance tests on it in Python.
-- Needs the temp table job_facts. Parameters: none.
-- Output: num_gpus, num_servers, placement, status, shares_server, mean_gpu_util_pct, util_samples.
-- Stage: input
SELECT num_gpus, num_servers, placement, status, shares_server, mean_gpu_util_pct, util_samples
FROM job_facts
WHERE util_samples > 0
ORDER BY source, job_id
