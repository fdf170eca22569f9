-- gpu_time_by_status_size: GPU time by job size bucket and final status.
-- Needs the temp table job_facts. Parameters: none.
-- Output: size_bucket, status, jobs, gpu_hours, bucket_gpu_time_pct (share of the bucket's GPU time).
-- Stage: result
SELECT size_bucket, status,
       count(*) AS jobs,
       coalesce(sum(gpu_time_s), 0) / 3600.0 AS gpu_hours,
       100.0 * coalesce(sum(gpu_time_s), 0)
           / nullif(sum(sum(gpu_time_s)) OVER (PARTITION BY size_bucket), 0) AS bucket_gpu_time_pct
FROM job_facts
GROUP BY size_bucket, size_order, status
ORDER BY size_order, status
