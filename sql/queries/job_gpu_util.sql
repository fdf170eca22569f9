-- job_gpu_util: per job, the mean of the non-null GPU utilization samples that
-- belong to its attempts (domain.md: start <= t < end on an allocated (machine, GPU)).
-- Needs the temp table attempt_windows (sql/queries/attempt_windows.sql).
-- Samples are matched through hour buckets so the join stays an equi-join:
-- each window is listed once per hour it touches, each sample once.
-- Output: source, job_id, mean_gpu_util_pct, util_samples.
WITH window_hours AS (
    SELECT w.*, unnest(generate_series(date_trunc('hour', start_at), end_at, INTERVAL 1 HOUR)) AS hour
    FROM attempt_windows w
)
SELECT w.source, w.job_id,
       avg(s.util_pct) AS mean_gpu_util_pct,
       count(s.util_pct) AS util_samples
FROM gpu_samples s
JOIN window_hours w
  ON s.machine_id = w.machine_id AND s.gpu_index = w.gpu_index
 AND date_trunc('hour', s.sample_at) = w.hour
WHERE s.sample_at >= w.start_at AND s.sample_at < w.end_at AND s.util_pct IS NOT NULL
GROUP BY w.source, w.job_id
