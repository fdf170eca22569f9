-- gpu_samples_by_machine: one scan of gpu_samples per report for the per-machine facts
-- that the capacity, attribution and coverage tables need, so that none of them scans the
-- samples again (under --engine spark this scan runs in Spark): the GPUs observed in
-- non-null samples (highest GPU index + 1, as the view machine_capacity counts them), the
-- GPUs sampled at all (attempt_attribution's machine sizes), sample counts, and the
-- machine's first and last sample time (the telemetry's span is their min and max).
-- Parameters: none.
-- Output: machine_id, observed_gpus (NULL when no non-null sample), sampled_gpus, samples,
-- non_null, first_at, last_at.
-- Stage: every_job, heavy, kept
SELECT machine_id,
       max(gpu_index) FILTER (WHERE util_pct IS NOT NULL) + 1 AS observed_gpus,
       max(gpu_index) + 1 AS sampled_gpus,
       count(*) AS samples,
       count(util_pct) AS non_null,
       min(sample_at) AS first_at,
       max(sample_at) AS last_at
FROM gpu_samples
GROUP BY machine_id
