-- queue_delay_summary_by_size: queueing delay (submit -> first start of any attempt)
-- percentiles per job size bucket, plus an 'all' row.
-- Needs the temp table job_facts. Parameters: none.
-- Output: size_bucket, jobs, jobs_with_delay, p50_s, p90_s, p99_s, mean_s, max_s.
-- Stage: result
SELECT CASE WHEN GROUPING(size_bucket) = 1 THEN 'all' ELSE size_bucket END AS size_bucket,
       count(*) AS jobs,
       count(queue_delay_s) AS jobs_with_delay,
       quantile_cont(queue_delay_s, 0.5) AS p50_s,
       quantile_cont(queue_delay_s, 0.9) AS p90_s,
       quantile_cont(queue_delay_s, 0.99) AS p99_s,
       avg(queue_delay_s) AS mean_s,
       max(queue_delay_s) AS max_s
FROM job_facts
GROUP BY GROUPING SETS ((size_bucket, size_order), ())
ORDER BY GROUPING(size_bucket), min(size_order)
