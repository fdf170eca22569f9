-- run_time_cdf_by_status: the empirical CDF of run time (first start -> last end) per final
-- status; for failed jobs this is the time to failure. Thinned to about 200 points per status.
-- Needs the temp table job_facts. Parameters: none.
-- Output: status, run_time_s, cum_share.
-- Stage: result
WITH ranked AS (
    SELECT status, run_time_s,
           row_number() OVER (PARTITION BY status ORDER BY run_time_s) AS rn,
           count(*) OVER (PARTITION BY status) AS n
    FROM job_facts
    WHERE run_time_s IS NOT NULL
)
SELECT status, run_time_s, rn / n AS cum_share
FROM ranked
WHERE rn = 1 OR rn = n OR rn % greatest(n // 200, 1) = 0
ORDER BY status, rn
