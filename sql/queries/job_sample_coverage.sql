-- job_sample_coverage: jobs by how much of their GPU time inside the telemetry's span is
-- covered by attributed samples (util_samples x $sample_interval_s / GPU-seconds in span).
-- Jobs with no GPU time inside the span are not counted.
-- Needs the temp tables attempt_windows, job_facts, gpu_samples_by_machine (the telemetry's span).
-- Parameters: $sample_interval_s (DOUBLE; NULL gives no rows).
-- Output: coverage_bucket ('none', '<25%', '25-50%', '50-75%', '75-95%', '>=95%'),
-- bucket_order, jobs, gpu_hours_in_span.
-- Stage: result
WITH telemetry AS (
    SELECT min(first_at) AS first_at, max(last_at) AS last_at FROM gpu_samples_by_machine
),
span AS (
    SELECT source, job_id,
           -- a row is gpus GPUs' windows (a whole machine's: attempt_windows)
           sum(greatest(epoch(least(end_at, t.last_at + to_seconds(CAST($sample_interval_s AS BIGINT))))
                        - epoch(greatest(start_at, t.first_at)), 0) * gpus) AS span_s
    FROM attempt_windows CROSS JOIN telemetry t
    WHERE t.first_at IS NOT NULL  -- no telemetry: no span (least/greatest would skip the NULLs)
    GROUP BY source, job_id
),
per_job AS (
    SELECT s.span_s, f.util_samples * $sample_interval_s / s.span_s AS coverage
    FROM span s JOIN job_facts f USING (source, job_id)
    WHERE s.span_s > 0 AND $sample_interval_s IS NOT NULL
),
bucketed AS (
    SELECT span_s,
           CASE WHEN coverage = 0 THEN 1 WHEN coverage < 0.25 THEN 2 WHEN coverage < 0.5 THEN 3
                WHEN coverage < 0.75 THEN 4 WHEN coverage < 0.95 THEN 5 ELSE 6 END AS bucket_order
    FROM per_job
)
SELECT ['none', '<25%', '25-50%', '50-75%', '75-95%', '>=95%'][bucket_order] AS coverage_bucket,
       bucket_order,
       count(*) AS jobs,
       sum(span_s) / 3600.0 AS gpu_hours_in_span
FROM bucketed
GROUP BY bucket_order
ORDER BY bucket_order
