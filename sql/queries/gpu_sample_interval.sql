-- gpu_sample_interval: the telemetry's sampling interval, as the most common gap between
-- consecutive distinct sample times among the first $rows stored GPU sample rows (a bounded
-- read: nvidia-smi exporters sample at a fixed period, so a prefix of the table is enough).
-- Parameters: $rows (BIGINT): how many stored rows to look at.
-- Output: interval_s (NULL when fewer than two distinct times), gaps (how many gaps were seen).
WITH times AS (
    -- LIMIT, not rowid: a dataset's gpu_samples is a view over Parquet files (in time order)
    SELECT DISTINCT sample_at FROM (SELECT sample_at FROM gpu_samples LIMIT $rows)
),
gaps AS (
    SELECT epoch(sample_at) - epoch(lag(sample_at) OVER (ORDER BY sample_at)) AS gap_s FROM times
)
SELECT mode(gap_s) AS interval_s, count(gap_s) AS gaps
FROM gaps
WHERE gap_s > 0
