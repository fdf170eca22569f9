-- wait_cause_totals: the replay's split of each job's first wait (temp table
-- replay_job_waits) summed by cause per group of like jobs (started or not, status, vc, size
-- bucket), for the wait_* report queries, which sum these groups further. One pass over the
-- jobs with each cause's sums side by side, then one row per (group, cause): a million jobs
-- make a few hundred rows here, where a row per (job, cause) made five million.
-- Only jobs with a split; fragmentation unknown (a source that names no machines) counts 0.
-- user_limit rows only for the jobs of sources whose store holds per-user caps (sacctmgr):
-- elsewhere the cause does not exist, and the tables keep the four causes they had.
-- Seconds (milliseconds, as the replay rounds them) and GPUs (thousandths at the finest,
-- Alibaba's gpu_milli) are exact decimals, so that the sums over them, and the sums of these
-- sums, are the same bytes on every run, whatever order DuckDB's threads add them in.
-- Needs the temp table job_keys (size buckets), and jobs (the selection's).
-- Parameters: none.
-- Output: started, status (jobs.status), vc (jobs.vc), size_bucket, size_order (job_keys),
-- cause (user_limit, fair_share, capacity, fragmentation, other), cause_order (0..4:
-- user_limit is checked first), jobs (jobs in the group with this cause split), wait_s (their
-- seconds), wait_gpu_s (seconds x GPUs).
-- Stage: after_replay
WITH waits AS (
    SELECT w.started, j.status, j.vc, k.size_bucket, k.size_order, w.source_has_user_caps AS capped,
           CAST(w.gpus AS DECIMAL(18, 3)) AS gpus,
           CAST(w.wait_user_limit_s AS DECIMAL(18, 3)) AS user_limit,
           CAST(w.wait_fair_share_s AS DECIMAL(18, 3)) AS fair_share,
           CAST(w.wait_capacity_s AS DECIMAL(18, 3)) AS capacity,
           CAST(coalesce(w.wait_fragmentation_s, 0) AS DECIMAL(18, 3)) AS fragmentation,
           CAST(w.wait_other_s AS DECIMAL(18, 3)) AS other
    FROM replay_job_waits w
    JOIN jobs j USING (source, job_id)
    JOIN job_keys k USING (source, job_id)
    WHERE w.wait_other_s IS NOT NULL
),
grouped AS (
    SELECT started, status, vc, size_bucket, size_order,
           count(*) AS jobs, count(*) FILTER (WHERE capped) AS capped_jobs,
           sum(user_limit) FILTER (WHERE capped) AS user_limit_s,
           sum(user_limit * gpus) FILTER (WHERE capped) AS user_limit_gpu_s,
           sum(fair_share) AS fair_share_s, sum(fair_share * gpus) AS fair_share_gpu_s,
           sum(capacity) AS capacity_s, sum(capacity * gpus) AS capacity_gpu_s,
           sum(fragmentation) AS fragmentation_s, sum(fragmentation * gpus) AS fragmentation_gpu_s,
           sum(other) AS other_s, sum(other * gpus) AS other_gpu_s
    FROM waits
    GROUP BY started, status, vc, size_bucket, size_order
)
SELECT started, status, vc, size_bucket, size_order, 'user_limit' AS cause, 0 AS cause_order,
       capped_jobs AS jobs, user_limit_s AS wait_s, user_limit_gpu_s AS wait_gpu_s
FROM grouped WHERE capped_jobs > 0
UNION ALL SELECT started, status, vc, size_bucket, size_order, 'fair_share', 1, jobs, fair_share_s, fair_share_gpu_s
FROM grouped
UNION ALL SELECT started, status, vc, size_bucket, size_order, 'capacity', 2, jobs, capacity_s, capacity_gpu_s
FROM grouped
UNION ALL SELECT started, status, vc, size_bucket, size_order, 'fragmentation', 3, jobs, fragmentation_s,
                 fragmentation_gpu_s
FROM grouped
UNION ALL SELECT started, status, vc, size_bucket, size_order, 'other', 4, jobs, other_s, other_gpu_s
FROM grouped
