-- gpu_activity_busy_idle: the jobs that look busy by utilization.gpu (mean >= $busy_util_pct)
-- but are nearly idle by SM activity (mean < $idle_sm_pct), most GPU time first, at most
-- $top_jobs (temp table job_facts).
-- Parameters: $busy_util_pct, $idle_sm_pct, $top_jobs.
-- Output: job_id, source, user, vc, status, num_gpus, gpu_hours, mean_gpu_util_pct,
-- mean_sm_active_pct, mean_tensor_active_pct.
-- Stage: result
SELECT job_id, source, "user", vc, status, num_gpus, gpu_time_s / 3600.0 AS gpu_hours,
       mean_gpu_util_pct, mean_sm_active_pct, mean_tensor_active_pct
FROM job_facts
WHERE mean_gpu_util_pct >= $busy_util_pct AND mean_sm_active_pct < $idle_sm_pct
ORDER BY gpu_time_s DESC NULLS LAST, source, job_id
LIMIT $top_jobs
