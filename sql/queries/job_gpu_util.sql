-- job_gpu_util: per job, the mean of the non-null GPU utilization samples that
-- belong to its attempts (domain.md: start <= t < end on an allocated (machine, GPU)).
-- Needs the temp tables attributed_util (sql/queries/attributed_util.sql), which made the
-- one pass over gpu_samples, and job_keys; this only reads its per-job rows.
-- Output: source, job_id, mean_gpu_util_pct, util_samples.
-- Stage: selected
SELECT k.source, k.job_id,
       a.util_sum / a.samples AS mean_gpu_util_pct,
       a.samples AS util_samples
FROM attributed_util a
JOIN job_keys k USING (job_key)
WHERE a.job_key IS NOT NULL
