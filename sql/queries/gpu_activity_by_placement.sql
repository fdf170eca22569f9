-- gpu_activity_by_placement: locality vs real work: per job size and placement (packed on
-- one server, spread over several), the per-job means of SM activity, tensor activity and
-- utilization.gpu of jobs with SM-activity samples (temp table job_facts). GPU jobs only.
-- Parameters: none.
-- Output: size_bucket, size_order, placement, jobs, mean_sm_active_pct, mean_tensor_active_pct,
-- mean_gpu_util_pct (means of per-job means).
-- Stage: result
SELECT size_bucket, size_order, placement, count(*) AS jobs,
       avg(mean_sm_active_pct) AS mean_sm_active_pct,
       avg(mean_tensor_active_pct) AS mean_tensor_active_pct,
       avg(mean_gpu_util_pct) AS mean_gpu_util_pct
FROM job_facts
WHERE mean_sm_active_pct IS NOT NULL AND placement IS NOT NULL
GROUP BY ALL
ORDER BY size_order, placement
