-- attributed_util: the single pass over gpu_samples that every utilization figure reuses.
-- Each non-null sample that belongs to a job (domain.md: start <= t < end on an allocated
-- (machine, GPU), windows from the temp table attempt_windows) is counted into a per-job
-- histogram of 1-percent bins; util_sum keeps the exact sum so that means are not binned.
-- Per-sample distributions for any job attribute are sums of these rows, so no per-sample
-- row ever leaves DuckDB.
-- Speed (hundreds of millions of samples): samples are matched through hour buckets so the
-- join stays an equi-join (each window listed once per hour it touches, each sample once);
-- hours are integers (epoch hours), hours outside the telemetry's span are not listed, and
-- jobs are an INTEGER key in the big join and aggregation, named again only at the end.
-- Parameters: none.
-- Output: source, job_id, util_bin (0..100: floor(util_pct), clamped), samples, util_sum.
WITH job_keys AS (
    SELECT source, job_id, CAST(row_number() OVER (ORDER BY source, job_id) AS INTEGER) AS job_key
    FROM (SELECT DISTINCT source, job_id FROM attempt_windows)
),
telemetry AS (
    SELECT min(sample_at) AS first_at, max(sample_at) AS last_at FROM gpu_samples
),
window_hours AS (
    SELECT k.job_key, w.machine_id, w.gpu_index, w.start_at, w.end_at,
           unnest(range(epoch_us(greatest(w.start_at, t.first_at)) // 3600000000,
                        epoch_us(least(w.end_at, t.last_at)) // 3600000000 + 1)) AS hour
    FROM attempt_windows w
    JOIN job_keys k USING (source, job_id)
    CROSS JOIN telemetry t
    WHERE w.end_at > t.first_at AND w.start_at <= t.last_at
),
histogram AS (
    -- clamping into 0..100 costs a lot per sample; it is done on the (far fewer) groups below
    SELECT w.job_key,
           CAST(floor(s.util_pct) AS INTEGER) AS raw_bin,
           count(*) AS samples,
           sum(s.util_pct) AS util_sum
    FROM gpu_samples s
    JOIN window_hours w
      ON s.machine_id = w.machine_id AND s.gpu_index = w.gpu_index
     AND epoch_us(s.sample_at) // 3600000000 = w.hour
    WHERE s.sample_at >= w.start_at AND s.sample_at < w.end_at AND s.util_pct IS NOT NULL
    GROUP BY w.job_key, raw_bin
),
clamped AS (
    SELECT job_key, CAST(least(greatest(raw_bin, 0), 100) AS SMALLINT) AS util_bin,
           CAST(sum(samples) AS BIGINT) AS samples, sum(util_sum) AS util_sum
    FROM histogram
    GROUP BY ALL
)
SELECT k.source, k.job_id, c.util_bin, c.samples, c.util_sum
FROM clamped c
JOIN job_keys k USING (job_key)
