-- attributed_activity: per job, DCGM's profiling measures of how much of its GPUs really
-- worked (gpu_sample_details.sm_active, tensor_active: ratios 0-1), over the samples that
-- belong to its attempts exactly as utilization samples do (domain.md: start <= t < end on
-- an allocated (machine, GPU); windows from the temp table attempt_windows). Whole-GPU rows
-- only (gpu_instance_id NULL): a MIG instance is not a GPU an allocation names.
-- Speed: the same hour-bucket equi-join as attributed_util, over the detail rows that carry
-- a profiling value (most sources have none: then this reads nothing).
-- Needs the temp tables attempt_windows and job_keys.
-- Parameters: none.
-- Output: source, job_id, sm_samples, sm_sum, tensor_samples, tensor_sum (one row per job
-- with at least one such sample). Sums are exact, as attributed_util's, in integer
-- millionths: the values are REAL (about 7 significant digits) and DCGM prints at most 6
-- decimals, so rounding to a millionth gives back the value printed.
-- Stage: selected, heavy
WITH profiled AS (
    SELECT sample_at, machine_id, gpu_index, sm_active, tensor_active
    FROM gpu_sample_details
    WHERE gpu_instance_id IS NULL AND (sm_active IS NOT NULL OR tensor_active IS NOT NULL)
),
span AS (
    SELECT min(sample_at) AS first_at, max(sample_at) AS last_at FROM profiled
),
-- a window of a whole machine's GPUs as one window per GPU, in the profiled span only
gpu_windows AS (
    SELECT w.source, w.job_id, w.machine_id, w.start_at, w.end_at,
           -- (not cast: Spark takes no generator inside an expression)
           unnest(range(w.gpu_index, w.gpu_index + w.gpus)) AS gpu_index
    FROM attempt_windows w
    CROSS JOIN span t
    WHERE t.first_at IS NOT NULL AND w.end_at > t.first_at AND w.start_at <= t.last_at
),
window_hours AS (
    SELECT w.source, w.job_id, w.machine_id, w.gpu_index, w.start_at, w.end_at,
           unnest(range(epoch_us(greatest(w.start_at, t.first_at)) // 3600000000,
                        epoch_us(least(w.end_at, t.last_at)) // 3600000000 + 1)) AS hour
    FROM gpu_windows w
    CROSS JOIN span t
)
SELECT w.source, w.job_id,
       count(p.sm_active) AS sm_samples,
       coalesce(sum(TRY_CAST(p.sm_active * 1000000 AS BIGINT)) / 1e6, 0) AS sm_sum,
       count(p.tensor_active) AS tensor_samples,
       coalesce(sum(TRY_CAST(p.tensor_active * 1000000 AS BIGINT)) / 1e6, 0) AS tensor_sum
FROM profiled p
JOIN window_hours w
  ON p.machine_id = w.machine_id AND p.gpu_index = w.gpu_index
 AND epoch_us(p.sample_at) // 3600000000 = w.hour
WHERE p.sample_at >= w.start_at AND p.sample_at < w.end_at
GROUP BY w.source, w.job_id
