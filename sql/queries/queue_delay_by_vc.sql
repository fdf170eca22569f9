-- queue_delay_by_vc: queueing delay percentiles per virtual cluster (tenant), busiest first.
-- Needs the temp table job_facts. Parameters: none.
-- Output: vc, jobs, jobs_with_delay, p50_s, p90_s, p99_s, mean_s, gpu_hours.
-- Stage: result
SELECT coalesce(vc, '(none)') AS vc,
       count(*) AS jobs,
       count(queue_delay_s) AS jobs_with_delay,
       quantile_cont(queue_delay_s, 0.5) AS p50_s,
       quantile_cont(queue_delay_s, 0.9) AS p90_s,
       quantile_cont(queue_delay_s, 0.99) AS p99_s,
       avg(queue_delay_s) AS mean_s,
       coalesce(sum(gpu_time_s), 0) / 3600.0 AS gpu_hours
FROM job_facts
GROUP BY vc
ORDER BY jobs DESC, vc
