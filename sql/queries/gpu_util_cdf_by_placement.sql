-- gpu_util_cdf_by_placement: the distribution of per-sample GPU utilization for jobs packed
-- on one server vs spread over 2+ servers, from the cohort histograms of the temp
-- table attributed_util (cohorts: temp table job_keys; 1-percent bins).
-- Parameters: none.
-- Output: placement ('packed', 'spread'), util_bin (0..100: samples with floor(util) = bin),
-- samples, cum_share (share of the placement's samples with util < util_bin + 1).
-- Stage: result
WITH cohorts AS (
    SELECT DISTINCT cohort, placement FROM job_keys
),
binned AS (
    SELECT c.placement, a.util_bin, CAST(sum(a.samples) AS BIGINT) AS samples
    FROM attributed_util a
    JOIN cohorts c USING (cohort)
    WHERE a.util_bin IS NOT NULL AND c.placement IS NOT NULL
    GROUP BY c.placement, a.util_bin
)
SELECT placement, util_bin, samples,
       sum(samples) OVER (PARTITION BY placement ORDER BY util_bin) / sum(samples) OVER (PARTITION BY placement) AS cum_share
FROM binned
ORDER BY placement, util_bin
