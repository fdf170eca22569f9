-- gpu_time_coverage: how much of the jobs' GPU time the GPU telemetry covers.
-- GPU time = the jobs' (machine, GPU) windows (temp table attempt_windows, overlapping
-- attempts of one job merged); the part inside the telemetry's span is what samples could
-- cover (temp tables attempt_windows, attributed_util, gpu_samples_by_machine: the
-- samples themselves are not read).
-- Expected samples = GPU-seconds in span / $sample_interval_s; coverage = attributed
-- non-null samples (the per-job rows of attributed_util) / expected.
-- Parameters: $sample_interval_s (DOUBLE, may be NULL: then coverage is NULL).
-- Output: window_gpu_hours, span_gpu_hours, telemetry_first_at, telemetry_last_at,
-- attributed_samples, expected_samples, coverage_pct, gpu_samples_non_null, attributed_share_pct
-- (attributed samples / non-null samples: how much of the telemetry falls in some job's window).
WITH telemetry AS (
    -- the samples' span and count from the one scan of them (gpu_samples_by_machine)
    SELECT min(first_at) AS first_at, max(last_at) AS last_at, coalesce(sum(non_null), 0) AS non_null
    FROM gpu_samples_by_machine
),
windows AS (
    -- a row is gpus GPUs' windows (a whole machine's: attempt_windows)
    SELECT sum((epoch(end_at) - epoch(start_at)) * gpus) AS window_s,
           -- CASE: least/greatest skip NULLs, so without telemetry they would not clip at all
           sum(CASE WHEN t.first_at IS NOT NULL THEN
               greatest(epoch(least(end_at, t.last_at + to_seconds(CAST(coalesce($sample_interval_s, 0) AS BIGINT))))
                        - epoch(greatest(start_at, t.first_at)), 0) * gpus END) AS span_s
    FROM attempt_windows CROSS JOIN telemetry t
),
attributed AS (
    SELECT sum(samples) AS samples FROM attributed_util WHERE job_key IS NOT NULL  -- the per-job rows
)
SELECT w.window_s / 3600.0 AS window_gpu_hours,
       w.span_s / 3600.0 AS span_gpu_hours,
       t.first_at AS telemetry_first_at,
       t.last_at AS telemetry_last_at,
       CAST(coalesce(a.samples, 0) AS BIGINT) AS attributed_samples,
       w.span_s / $sample_interval_s AS expected_samples,
       100.0 * coalesce(a.samples, 0) * $sample_interval_s / nullif(w.span_s, 0) AS coverage_pct,
       t.non_null AS gpu_samples_non_null,
       100.0 * coalesce(a.samples, 0) / nullif(t.non_null, 0) AS attributed_share_pct
FROM windows w, telemetry t, attributed a
