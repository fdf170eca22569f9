-- failure_rtf_cdf: the empirical CDF of runtime to failure (attempt end - start) of failed
-- attempts per failure category ('no log' for trials without a log), thinned to about 200
-- points per category.
-- Needs the temp table attempt_failures. Parameters: none.
-- Output: category, runtime_to_failure_s, cum_share.
-- Stage: result
WITH ranked AS (
    SELECT CASE WHEN NOT has_log THEN 'no log' WHEN reason = 'none' THEN 'no cause in the log' ELSE category END AS category,
           runtime_to_failure_s,
           row_number() OVER (PARTITION BY CASE WHEN NOT has_log THEN 'no log' WHEN reason = 'none' THEN 'no cause in the log' ELSE category END
                              ORDER BY runtime_to_failure_s) AS rn,
           count(*) OVER (PARTITION BY CASE WHEN NOT has_log THEN 'no log' WHEN reason = 'none' THEN 'no cause in the log' ELSE category END) AS n
    FROM attempt_failures
    WHERE runtime_to_failure_s IS NOT NULL
)
SELECT category, runtime_to_failure_s, rn / n AS cum_share
FROM ranked
WHERE rn = 1 OR rn = n OR rn % greatest(n // 200, 1) = 0
ORDER BY list_position(['infrastructure', 'framework', 'user', 'unknown', 'no cause in the log', 'no log'], category) NULLS LAST,
         category, rn
