-- wait_causes_by_vc: why jobs waited, by virtual cluster: the busiest $top_vcs VCs by
-- waiting GPU-time, the rest as '(other VCs)'. As wait_causes_by_size: started GPU jobs'
-- first waits, split by the replay (temp table wait_cause_totals).
-- Needs the temp table wait_cause_totals (by vc, among others).
-- Parameters: $top_vcs.
-- Output: vc ('(none)' for jobs without one), vc_rank, cause, cause_order, jobs, wait_hours,
-- wait_gpu_hours, share_pct (of the VC's waiting GPU-time).
-- Stage: result
WITH w AS (
    SELECT coalesce(vc, '(none)') AS vc, cause, cause_order, jobs, wait_s, wait_gpu_s FROM wait_cause_totals
    WHERE started
),
ranked AS (
    SELECT vc, row_number() OVER (ORDER BY sum(wait_gpu_s) DESC, vc) AS vc_rank FROM w GROUP BY vc
),
scoped AS (
    SELECT CASE WHEN k.vc_rank <= $top_vcs THEN w.vc ELSE '(other VCs)' END AS vc,
           least(k.vc_rank, $top_vcs + 1) AS vc_rank, w.cause, w.cause_order, w.jobs, w.wait_s, w.wait_gpu_s
    FROM w JOIN ranked k USING (vc)
),
summed AS (
    SELECT vc, vc_rank, cause, cause_order, CAST(sum(jobs) AS BIGINT) AS jobs, sum(wait_s) AS wait_s,
           sum(wait_gpu_s) AS wait_gpu_s
    FROM scoped GROUP BY vc, vc_rank, cause, cause_order
)
SELECT vc, vc_rank, cause, cause_order, jobs,
       CAST(wait_s AS DOUBLE) / 3600.0 AS wait_hours,
       CAST(wait_gpu_s AS DOUBLE) / 3600.0 AS wait_gpu_hours,
       100.0 * CAST(wait_gpu_s AS DOUBLE) / nullif(CAST(sum(wait_gpu_s) OVER (PARTITION BY vc) AS DOUBLE), 0) AS share_pct
FROM summed
ORDER BY vc_rank, cause_order
