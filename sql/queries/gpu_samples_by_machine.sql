-- gpu_samples_by_machine: one scan of gpu_samples per report for the per-machine facts
-- that the capacity and coverage tables need: the GPUs observed in non-null samples
-- (highest GPU index + 1, as the view machine_capacity counts them) and sample counts.
-- Parameters: none.
-- Output: machine_id, observed_gpus (NULL when no non-null sample), samples, non_null.
SELECT machine_id,
       max(gpu_index) FILTER (WHERE util_pct IS NOT NULL) + 1 AS observed_gpus,
       count(*) AS samples,
       count(util_pct) AS non_null
FROM gpu_samples
GROUP BY machine_id
