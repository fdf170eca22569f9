-- failure_rtf_cdf: the empirical CDF of runtime to failure (attempt end - start) of failed
-- attempts per failure category (failure_label: 'no log' for trials without a log), thinned to
-- about 200 points per category, in failure_category_order().
-- Needs the temp table failure_trials. Parameters: none.
-- Output: category, runtime_to_failure_s, cum_share.
-- Stage: result
WITH ranked AS (
    SELECT failure_label(has_evidence, reason, category) AS category,
           runtime_to_failure_s,
           row_number() OVER (PARTITION BY failure_label(has_evidence, reason, category)
                              ORDER BY runtime_to_failure_s) AS rn,
           count(*) OVER (PARTITION BY failure_label(has_evidence, reason, category)) AS n
    FROM failure_trials
    WHERE runtime_to_failure_s IS NOT NULL
)
SELECT category, runtime_to_failure_s, rn / n AS cum_share
FROM ranked
WHERE rn = 1 OR rn = n OR rn % greatest(n // 200, 1) = 0
ORDER BY list_position(failure_category_order(), category) NULLS LAST, category, rn
