-- gpu_sample_interval: the telemetry's sampling interval, as the most common gap (in whole seconds) between
-- consecutive distinct sample times among the first $rows stored GPU sample rows (a bounded
-- read: nvidia-smi exporters sample at a fixed period, so a prefix of the table is enough).
-- Parameters: $rows (BIGINT): how many stored rows to look at.
-- Output: interval_s (whole seconds; NULL when no two distinct times are 0.5 s or more apart),
-- gaps (how many gaps were seen).
WITH times AS (
    -- LIMIT, not rowid: a dataset's gpu_samples is a view over Parquet files (in time order)
    SELECT DISTINCT sample_at FROM (SELECT sample_at FROM gpu_samples LIMIT $rows)
),
gaps AS (
    SELECT epoch(sample_at) - epoch(lag(sample_at) OVER (ORDER BY sample_at)) AS gap_s FROM times
),
-- in whole seconds, as sampling periods are set: a log's jitter (GPUs of one round stamped
-- ms apart, rounds 899.6 s or 900.1 s apart) must not make every gap a value of its own,
-- where mode() would pick any of them; ties go to the shorter gap, so the answer is one
seconds AS (
    SELECT round(gap_s) AS gap_s, count(*) AS n FROM gaps WHERE round(gap_s) > 0 GROUP BY ALL
)
SELECT (SELECT gap_s FROM seconds ORDER BY n DESC, gap_s LIMIT 1) AS interval_s,
       (SELECT count(gap_s) FROM gaps WHERE gap_s > 0) AS gaps
