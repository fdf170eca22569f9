-- gpu_time_coverage: how much of the jobs' GPU time the GPU telemetry covers.
-- GPU time = the jobs' (machine, GPU) windows (temp table attempt_windows, overlapping
-- attempts of one job merged); the part inside the telemetry's span is what samples could
-- cover (temp tables attempt_windows, attributed_util, job_keys, gpu_samples_by_machine: the
-- samples themselves are not read).
-- Expected samples = GPU-seconds in span / $sample_interval_s; coverage = covered samples /
-- expected, where a job's covered samples are its attributed non-null samples (the per-job
-- rows of attributed_util) up to the most its windows can hold (one per interval and GPU,
-- rounded up per window, as a window of 90 s holds one or two samples 60 s apart): a job's GPU
-- time is not covered twice, and coverage never passes 100%. (Samples of one GPU from two
-- tools, nvidia-smi and DCGM, are two measurements, both stored and attributed; an interval
-- shorter than the most common gap also gives more samples than expected.)
-- Parameters: $sample_interval_s (DOUBLE, may be NULL: then coverage is NULL).
-- Output: window_gpu_hours, span_gpu_hours, telemetry_first_at, telemetry_last_at,
-- attributed_samples, expected_samples, covered_samples, coverage_pct, gpu_samples_non_null,
-- attributed_share_pct (attributed samples / non-null samples: how much of the telemetry falls
-- in some job's window).
-- Stage: result
WITH telemetry AS (
    -- the samples' span and count from the one scan of them (gpu_samples_by_machine)
    SELECT min(first_at) AS first_at, max(last_at) AS last_at, coalesce(sum(non_null), 0) AS non_null
    FROM gpu_samples_by_machine
),
job_windows AS (
    -- a row is gpus GPUs' windows (a whole machine's: attempt_windows)
    SELECT source, job_id, sum((epoch(end_at) - epoch(start_at)) * gpus) AS window_s,
           sum(in_span_s * gpus) AS span_s,
           CAST(sum(ceil(in_span_s / $sample_interval_s) * gpus) AS BIGINT) AS most_samples
    FROM (
        SELECT source, job_id, gpus, start_at, end_at,
               -- CASE: least/greatest skip NULLs, so without telemetry they would not clip at all
               CASE WHEN t.first_at IS NOT NULL THEN
                   greatest(epoch(least(end_at, t.last_at + to_seconds(CAST(coalesce($sample_interval_s, 0) AS BIGINT))))
                            - epoch(greatest(start_at, t.first_at)), 0) END AS in_span_s
        FROM attempt_windows CROSS JOIN telemetry t
    )
    GROUP BY source, job_id
),
windows AS (
    SELECT sum(window_s) AS window_s, sum(span_s) AS span_s FROM job_windows
),
attributed AS (
    SELECT sum(a.samples) AS samples,  -- the per-job rows
           sum(least(a.samples, w.most_samples)) AS covered
    FROM attributed_util a
    JOIN job_keys k USING (job_key)
    LEFT JOIN job_windows w USING (source, job_id)
    WHERE a.job_key IS NOT NULL
)
SELECT w.window_s / 3600.0 AS window_gpu_hours,
       w.span_s / 3600.0 AS span_gpu_hours,
       t.first_at AS telemetry_first_at,
       t.last_at AS telemetry_last_at,
       CAST(coalesce(a.samples, 0) AS BIGINT) AS attributed_samples,
       w.span_s / $sample_interval_s AS expected_samples,
       CAST(coalesce(a.covered, 0) AS BIGINT) AS covered_samples,
       -- rounding windows up can give a little more than the span holds: never past 100
       least(100.0 * coalesce(a.covered, 0) * $sample_interval_s / nullif(w.span_s, 0), 100.0) AS coverage_pct,
       t.non_null AS gpu_samples_non_null,
       100.0 * coalesce(a.samples, 0) / nullif(t.non_null, 0) AS attributed_share_pct
FROM windows w, telemetry t, attributed a
