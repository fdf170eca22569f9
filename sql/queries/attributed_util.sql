-- attributed_util: the single pass over gpu_samples that every utilization number reuses.
-- Each non-null sample that belongs to a job (domain.md: start <= t < end on an allocated
-- (machine, GPU), windows from the temp table attempt_windows) is counted twice in one
-- aggregation (GROUPING SETS): into its job's count and sum (rows with job_key set), and
-- into a 1-percent histogram of its job's cohort (status, size bucket, placement; temp
-- table job_keys) (rows with cohort and util_bin set). Sums are exact (in billionths of a
-- percent, as integers: a float sum's digits would depend on the order parallel threads add
-- in, and the same store must give the same bytes), so means are never binned; per-sample distributions by any cohort attribute are sums of the cohort rows,
-- and no per-sample row ever leaves DuckDB.
-- Speed (hundreds of millions of samples): samples are matched through hour buckets so the
-- join stays an equi-join (each window listed once per hour it touches, each sample once);
-- hours are integers (epoch hours) and hours outside the telemetry's span are not listed;
-- both groupings have few groups (jobs; cohorts x 101 bins), and bins are clamped into
-- 0..100 after the aggregation, not per sample.
-- Parameters: none.
-- Output: job_key (NULL on cohort rows), cohort and util_bin (NULL on job rows; util_bin
-- 0..100 = floor(util_pct) clamped, values that are not finite or beyond the INTEGER range
-- land in 100), samples, util_sum.
-- Stage: selected, heavy, kept
WITH telemetry AS (
    SELECT min(sample_at) AS first_at, max(sample_at) AS last_at FROM gpu_samples
),
-- a window of a whole machine's GPUs (temp table attempt_windows) as one window per GPU,
-- for the windows in the telemetry's span only
gpu_windows AS (
    SELECT w.source, w.job_id, w.machine_id, w.start_at, w.end_at,
           -- (not cast: Spark takes no generator inside an expression)
           unnest(range(w.gpu_index, w.gpu_index + w.gpus)) AS gpu_index
    FROM attempt_windows w
    CROSS JOIN telemetry t
    WHERE w.end_at > t.first_at AND w.start_at <= t.last_at
),
window_hours AS (
    SELECT k.job_key, k.cohort, w.machine_id, w.gpu_index, w.start_at, w.end_at,
           unnest(range(epoch_us(greatest(w.start_at, t.first_at)) // 3600000000,
                        epoch_us(least(w.end_at, t.last_at)) // 3600000000 + 1)) AS hour
    FROM gpu_windows w
    JOIN job_keys k USING (source, job_id)
    CROSS JOIN telemetry t
),
grouped AS (
    SELECT w.job_key, w.cohort,
           TRY_CAST(floor(s.util_pct) AS INTEGER) AS raw_bin,
           count(*) AS samples,
           -- every reader stores utilization as a finite 0-100 (others are rejects), so each is
           -- a BIGINT of billionths; the cast rounds (as round() would, at less cost per sample)
           -- and TRY_ keeps a value from elsewhere from failing the report
           sum(TRY_CAST(s.util_pct * 1000000000 AS BIGINT)) AS util_nano
    FROM gpu_samples s
    JOIN window_hours w
      ON s.machine_id = w.machine_id AND s.gpu_index = w.gpu_index
     AND epoch_us(s.sample_at) // 3600000000 = w.hour
    WHERE s.sample_at >= w.start_at AND s.sample_at < w.end_at AND s.util_pct IS NOT NULL
    GROUP BY GROUPING SETS ((w.job_key), (w.cohort, raw_bin))
)
SELECT job_key, NULL::INTEGER AS cohort, NULL::SMALLINT AS util_bin,
       CAST(samples AS BIGINT) AS samples, coalesce(util_nano / 1e9, 0) AS util_sum
FROM grouped WHERE job_key IS NOT NULL
UNION ALL
SELECT NULL, cohort, util_bin, samples, coalesce(util_nano / 1e9, 0)
FROM (
    SELECT cohort,
           CAST(CASE WHEN raw_bin IS NULL THEN 100 ELSE least(greatest(raw_bin, 0), 100) END AS SMALLINT) AS util_bin,
           CAST(sum(samples) AS BIGINT) AS samples, sum(util_nano) AS util_nano
    FROM grouped WHERE job_key IS NULL
    GROUP BY ALL
)
