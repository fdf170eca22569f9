-- gpu_util_cdf_by_status: the distribution of per-sample GPU utilization by the job's final
-- status, from the cohort histograms of the temp table attributed_util (cohorts: temp table
-- job_keys; 1-percent bins).
-- Parameters: none.
-- Output: status, util_bin, samples, cum_share.
-- Stage: result
WITH cohorts AS (
    SELECT DISTINCT cohort, status FROM job_keys
),
binned AS (
    SELECT c.status, a.util_bin, CAST(sum(a.samples) AS BIGINT) AS samples
    FROM attributed_util a
    JOIN cohorts c USING (cohort)
    WHERE a.util_bin IS NOT NULL
    GROUP BY c.status, a.util_bin
)
SELECT status, util_bin, samples,
       sum(samples) OVER (PARTITION BY status ORDER BY util_bin) / sum(samples) OVER (PARTITION BY status) AS cum_share
FROM binned
ORDER BY status, util_bin
