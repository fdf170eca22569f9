-- gpu_activity_grid: jobs by their mean utilization.gpu (10-point bins) and their mean SM
-- activity (10-point bins): where the two measures disagree (temp table job_facts).
-- Parameters: none.
-- Output: util_bin, sm_bin (0, 10, ..., 90; 100 goes in 90), jobs, gpu_hours.
-- Stage: result
SELECT least(CAST(floor(mean_gpu_util_pct / 10) AS INTEGER), 9) * 10 AS util_bin,
       least(CAST(floor(mean_sm_active_pct / 10) AS INTEGER), 9) * 10 AS sm_bin,
       count(*) AS jobs,
       coalesce(sum(gpu_time_s), 0) / 3600.0 AS gpu_hours
FROM job_facts
WHERE mean_gpu_util_pct IS NOT NULL AND mean_sm_active_pct IS NOT NULL
  AND isfinite(mean_gpu_util_pct) AND isfinite(mean_sm_active_pct)
GROUP BY ALL
ORDER BY util_bin, sm_bin
