-- job_gpu_util: per job, the mean of the non-null GPU utilization samples that
-- belong to its attempts (domain.md: start <= t < end on an allocated (machine, GPU)).
-- Needs the temp table attributed_util (sql/queries/attributed_util.sql), which made the
-- one pass over gpu_samples; this only folds its per-job histogram back into a mean.
-- Output: source, job_id, mean_gpu_util_pct, util_samples.
SELECT source, job_id,
       sum(util_sum) / sum(samples) AS mean_gpu_util_pct,
       CAST(sum(samples) AS BIGINT) AS util_samples
FROM attributed_util
GROUP BY source, job_id
