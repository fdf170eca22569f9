-- gpu_sample_interval: the telemetry's sampling interval, as the most common gap (in whole
-- seconds) between consecutive distinct sample times in the telemetry's first day (a bounded
-- read: exporters sample at a fixed period, so a day is enough). A day, not the first N rows
-- stored: which rows come first is not fixed over a dataset's Parquet files, and the same
-- store must give the same report; sample_at's zone maps let DuckDB skip the other days.
-- Parameters: none. Input: temp table gpu_samples_by_machine (first_at).
-- Output: interval_s (whole seconds; NULL when no two distinct times are 0.5 s or more apart),
-- gaps (how many gaps were seen).
-- Stage: result
WITH span AS (
    SELECT min(first_at) AS first_at FROM gpu_samples_by_machine
),
times AS (
    SELECT DISTINCT s.sample_at FROM gpu_samples s, span
    WHERE s.sample_at >= span.first_at AND s.sample_at < span.first_at + INTERVAL 1 DAY
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
