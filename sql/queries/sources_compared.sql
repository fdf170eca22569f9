-- sources_compared: one row per input source (philly, slurm, helios, acme, alibaba, ...),
-- so that a store holding several traces compares them side by side (temp table job_facts).
-- Parameters: none.
-- Output: source, jobs, users, vcs, GPU-hours, shares of jobs passed / failed / killed /
-- other final statuses, jobs_pct_multi_gpu (first allocation > 1 GPU), median GPUs, queueing
-- delay p50/p90 (s, jobs with a delay), run time p50 (s), mean GPU utilization over the jobs'
-- samples (sample-weighted; NULL without samples), and the share of jobs with a failure reason.
-- Stage: result
SELECT
    source,
    count(*) AS jobs,
    count(DISTINCT "user") AS users,
    count(DISTINCT vc) AS vcs,
    sum(gpu_time_s) / 3600 AS gpu_hours,
    100 * avg(CASE WHEN status = 'passed' THEN 1 ELSE 0 END) AS passed_pct,
    100 * avg(CASE WHEN status IN ('failed', 'timeout', 'node_fail') THEN 1 ELSE 0 END) AS failed_pct,
    100 * avg(CASE WHEN status = 'killed' THEN 1 ELSE 0 END) AS killed_pct,
    100 * avg(CASE WHEN status NOT IN ('passed', 'failed', 'timeout', 'node_fail', 'killed') THEN 1 ELSE 0 END) AS other_status_pct,
    100 * avg(CASE WHEN num_gpus > 1 THEN 1.0 WHEN num_gpus IS NOT NULL THEN 0.0 END) AS multi_gpu_jobs_pct,
    median(num_gpus) AS median_gpus,
    quantile_cont(queue_delay_s, 0.5) AS queue_delay_p50_s,
    quantile_cont(queue_delay_s, 0.9) AS queue_delay_p90_s,
    quantile_cont(run_time_s, 0.5) AS run_time_p50_s,
    sum(mean_gpu_util_pct * util_samples) / nullif(sum(util_samples), 0) AS mean_gpu_util_pct,
    100 * avg(CASE WHEN failure_reason IS NOT NULL THEN 1 ELSE 0 END) AS jobs_with_failure_reason_pct
FROM job_facts
GROUP BY source
ORDER BY jobs DESC, source
