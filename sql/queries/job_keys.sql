-- job_keys: a dense INTEGER key for every job that has at least one attempt window
-- (temp table attempt_windows), so that the big per-sample join and aggregation in
-- attributed_util group by one small integer instead of (source, job_id) strings.
-- Parameters: none.
-- Output: source, job_id, job_key (1..n, in (source, job_id) order).
SELECT source, job_id, CAST(row_number() OVER (ORDER BY source, job_id) AS INTEGER) AS job_key
FROM (SELECT DISTINCT source, job_id FROM attempt_windows)
