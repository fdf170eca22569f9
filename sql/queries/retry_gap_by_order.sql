-- retry_gap_by_order: the wait between consecutive attempts of a job (retries):
-- next attempt's start - previous attempt's end, by the later attempt's order
-- (retry_no 1 = between the 1st and 2nd attempt). Attempts are ordered by start
-- (attempt_no); a gap needs both times. This is apart from the first wait (submit -> first start).
-- Parameters: none.
-- Output: retry_no, gaps, p50_s, p90_s, p99_s, mean_s, overlapping (gaps < 0: the next
-- attempt started before the previous one ended).
-- Stage: result
WITH timed AS (
    SELECT source, job_id, attempt_no, start_at,
           lag(end_at) OVER (PARTITION BY source, job_id ORDER BY attempt_no) AS previous_end
    FROM attempts
),
gaps AS (
    SELECT attempt_no AS retry_no, epoch(start_at) - epoch(previous_end) AS gap_s
    FROM timed
    WHERE attempt_no > 0 AND start_at IS NOT NULL AND previous_end IS NOT NULL
)
SELECT retry_no,
       count(*) AS gaps,
       quantile_cont(gap_s, 0.5) AS p50_s,
       quantile_cont(gap_s, 0.9) AS p90_s,
       quantile_cont(gap_s, 0.99) AS p99_s,
       avg(gap_s) AS mean_s,
       count(*) FILTER (WHERE gap_s < 0) AS overlapping
FROM gaps
GROUP BY retry_no
ORDER BY retry_no
