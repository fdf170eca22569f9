-- job_gpu_util: per job, the mean of the non-null GPU utilization samples that
-- belong to its attempts (domain.md: start <= t < end on an allocated (machine, GPU)).
-- Needs the temp tables attributed_util (sql/queries/attributed_util.sql), which made the
-- one pass over gpu_samples, and job_keys; this only folds the per-job histogram back
-- into a mean.
-- Output: source, job_id, mean_gpu_util_pct, util_samples.
WITH per_job AS (
    SELECT job_key, sum(util_sum) / sum(samples) AS mean_gpu_util_pct, CAST(sum(samples) AS BIGINT) AS util_samples
    FROM attributed_util
    GROUP BY job_key
)
SELECT k.source, k.job_id, p.mean_gpu_util_pct, p.util_samples
FROM per_job p
JOIN job_keys k USING (job_key)
