-- wait_causes_by_vc: why jobs waited, by virtual cluster: the busiest $top_vcs VCs by
-- waiting GPU-time, the rest as '(other VCs)'. As wait_causes_by_size: started GPU jobs'
-- first waits, split by the replay (temp table replay_job_waits).
-- Needs the temp tables replay_job_waits and jobs.
-- Parameters: $top_vcs.
-- Output: vc ('(none)' for jobs without one), vc_rank, cause, cause_order, jobs, wait_hours,
-- wait_gpu_hours, share_pct (of the VC's waiting GPU-time).
WITH w AS (
    SELECT coalesce(j.vc, '(none)') AS vc, r.gpus,
           r.wait_fair_share_s, r.wait_capacity_s, coalesce(r.wait_fragmentation_s, 0) AS wait_fragmentation_s,
           r.wait_other_s
    FROM replay_job_waits r JOIN jobs j USING (source, job_id)
    WHERE r.started AND r.wait_other_s IS NOT NULL
),
ranked AS (
    SELECT vc, row_number() OVER (ORDER BY total DESC, vc) AS vc_rank FROM (
        SELECT vc, sum((wait_fair_share_s + wait_capacity_s + wait_fragmentation_s + wait_other_s) * gpus) AS total
        FROM w GROUP BY vc
    )
),
scoped AS (
    SELECT CASE WHEN k.vc_rank <= $top_vcs THEN w.vc ELSE '(other VCs)' END AS vc,
           least(k.vc_rank, $top_vcs + 1) AS vc_rank, w.* EXCLUDE (vc)
    FROM w JOIN ranked k USING (vc)
),
long AS (
    SELECT vc, vc_rank, 'fair_share' AS cause, 1 AS cause_order, wait_fair_share_s AS s, gpus FROM scoped
    UNION ALL SELECT vc, vc_rank, 'capacity', 2, wait_capacity_s, gpus FROM scoped
    UNION ALL SELECT vc, vc_rank, 'fragmentation', 3, wait_fragmentation_s, gpus FROM scoped
    UNION ALL SELECT vc, vc_rank, 'other', 4, wait_other_s, gpus FROM scoped
),
summed AS (
    SELECT vc, vc_rank, cause, cause_order, count(*) AS jobs, sum(s) / 3600.0 AS wait_hours,
           sum(s * gpus) / 3600.0 AS wait_gpu_hours
    FROM long GROUP BY vc, vc_rank, cause, cause_order
)
SELECT vc, vc_rank, cause, cause_order, jobs, wait_hours, wait_gpu_hours,
       100.0 * wait_gpu_hours / nullif(sum(wait_gpu_hours) OVER (PARTITION BY vc), 0) AS share_pct
FROM summed
ORDER BY vc_rank, cause_order
