-- gpu_activity_summary: how much of their GPUs jobs really worked (DCGM's SM activity and
-- tensor-pipe activity, temp table attributed_activity) beside what nvidia-smi's
-- utilization.gpu says of the same jobs (temp table job_facts). One row.
-- A job "looks busy but is nearly idle" when its mean utilization is at least $busy_util_pct
-- while its mean SM activity is below $idle_sm_pct: kernels ran all the time, on few SMs.
-- Parameters: $busy_util_pct, $idle_sm_pct.
-- Output: jobs_measured (jobs with SM-activity samples), sm_samples, mean_sm_active_pct and
-- mean_tensor_active_pct (sample-weighted), jobs_with_util (of those, with utilization
-- samples), mean_gpu_util_pct (their utilization, sample-weighted), measured_gpu_hours,
-- busy_idle_jobs, busy_idle_gpu_hours, busy_idle_gpu_hours_pct (of measured_gpu_hours).
-- Stage: result
WITH j AS (
    SELECT f.*, a.sm_samples, a.sm_sum, a.tensor_samples, a.tensor_sum
    FROM job_facts f JOIN attributed_activity a USING (source, job_id)
    WHERE a.sm_samples > 0
)
SELECT count(*) AS jobs_measured,
       sum(sm_samples) AS sm_samples,
       100.0 * sum(sm_sum) / nullif(sum(sm_samples), 0) AS mean_sm_active_pct,
       100.0 * sum(tensor_sum) / nullif(sum(tensor_samples), 0) AS mean_tensor_active_pct,
       count(*) FILTER (WHERE util_samples > 0) AS jobs_with_util,
       sum(mean_gpu_util_pct * util_samples) / nullif(sum(util_samples), 0) AS mean_gpu_util_pct,
       coalesce(sum(gpu_time_s), 0) / 3600.0 AS measured_gpu_hours,
       count(*) FILTER (WHERE mean_gpu_util_pct >= $busy_util_pct AND mean_sm_active_pct < $idle_sm_pct) AS busy_idle_jobs,
       coalesce(sum(gpu_time_s) FILTER (WHERE mean_gpu_util_pct >= $busy_util_pct AND mean_sm_active_pct < $idle_sm_pct), 0)
           / 3600.0 AS busy_idle_gpu_hours,
       100.0 * coalesce(sum(gpu_time_s) FILTER (WHERE mean_gpu_util_pct >= $busy_util_pct AND mean_sm_active_pct < $idle_sm_pct), 0)
           / nullif(sum(gpu_time_s), 0) AS busy_idle_gpu_hours_pct
FROM j
