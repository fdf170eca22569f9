-- gpu_util_cdf_by_placement: the distribution of per-sample GPU utilization for jobs packed
-- on one server vs spread over 2+ servers, from the attributed histogram (temp tables
-- attributed_util, job_facts; 1-percent bins).
-- Parameters: none.
-- Output: placement ('packed', 'spread'), util_bin (0..100: samples with floor(util) = bin),
-- samples, cum_share (share of the placement's samples with util < util_bin + 1).
WITH binned AS (
    SELECT f.placement, a.util_bin, CAST(sum(a.samples) AS BIGINT) AS samples
    FROM attributed_util a
    JOIN job_facts f USING (job_key)
    WHERE f.placement IS NOT NULL
    GROUP BY f.placement, a.util_bin
)
SELECT placement, util_bin, samples,
       sum(samples) OVER (PARTITION BY placement ORDER BY util_bin) / sum(samples) OVER (PARTITION BY placement) AS cum_share
FROM binned
ORDER BY placement, util_bin
