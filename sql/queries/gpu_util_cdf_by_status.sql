-- gpu_util_cdf_by_status: the distribution of per-sample GPU utilization by the job's final
-- status, from the attributed histogram (temp tables attributed_util, job_facts; 1-percent bins).
-- Parameters: none.
-- Output: status, util_bin, samples, cum_share.
WITH binned AS (
    SELECT f.status, a.util_bin, CAST(sum(a.samples) AS BIGINT) AS samples
    FROM attributed_util a
    JOIN job_facts f USING (job_key)
    GROUP BY f.status, a.util_bin
)
SELECT status, util_bin, samples,
       sum(samples) OVER (PARTITION BY status ORDER BY util_bin) / sum(samples) OVER (PARTITION BY status) AS cum_share
FROM binned
ORDER BY status, util_bin
