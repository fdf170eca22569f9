-- gpu_time_by_run_time_status: jobs and GPU time by run-time bucket, per final status:
-- do failures strike fast (cheap) or late (expensive)?
-- Needs the temp table job_facts. Parameters: none.
-- Output: status, run_time_bucket ('<10 min', '10-60 min', '1-6 h', '6-24 h', '>1 day'),
-- bucket_order, jobs, gpu_hours, status_gpu_time_pct (share of the status's GPU time).
-- Stage: result
WITH bucketed AS (
    SELECT status, gpu_time_s,
           CASE WHEN run_time_s < 600 THEN 1 WHEN run_time_s < 3600 THEN 2 WHEN run_time_s < 6 * 3600 THEN 3
                WHEN run_time_s < 86400 THEN 4 ELSE 5 END AS bucket_order
    FROM job_facts
    WHERE run_time_s IS NOT NULL
)
SELECT status,
       ['<10 min', '10-60 min', '1-6 h', '6-24 h', '>1 day'][bucket_order] AS run_time_bucket,
       bucket_order,
       count(*) AS jobs,
       coalesce(sum(gpu_time_s), 0) / 3600.0 AS gpu_hours,
       100.0 * coalesce(sum(gpu_time_s), 0) / nullif(sum(sum(gpu_time_s)) OVER (PARTITION BY status), 0)
           AS status_gpu_time_pct
FROM bucketed
GROUP BY status, bucket_order
ORDER BY status, bucket_order
