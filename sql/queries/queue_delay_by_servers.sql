-- queue_delay_by_servers: queueing delay by job size bucket and number of servers the
-- first allocated attempt spanned (gang scheduling with locality: wider jobs may wait longer).
-- Needs the temp table job_facts. Parameters: none.
-- Output: size_bucket, num_servers, jobs, p50_s, p90_s, mean_s.
-- Stage: result
SELECT size_bucket, num_servers,
       count(queue_delay_s) AS jobs,
       quantile_cont(queue_delay_s, 0.5) AS p50_s,
       quantile_cont(queue_delay_s, 0.9) AS p90_s,
       avg(queue_delay_s) AS mean_s
FROM job_facts
WHERE num_servers IS NOT NULL AND queue_delay_s IS NOT NULL
GROUP BY size_bucket, size_order, num_servers
ORDER BY size_order, num_servers
