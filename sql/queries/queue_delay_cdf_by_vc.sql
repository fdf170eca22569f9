-- queue_delay_cdf_by_vc: the empirical CDF of queueing delay for the $top_vcs busiest virtual
-- clusters (by jobs), thinned to about 200 points each.
-- Needs the temp table job_facts.
-- Parameters: $top_vcs (INTEGER): how many VCs to include.
-- Output: vc, queue_delay_s, cum_share.
-- Stage: result
WITH busiest AS (
    SELECT coalesce(vc, '(none)') AS vc, count(*) AS jobs
    FROM job_facts GROUP BY 1
    ORDER BY jobs DESC, vc
    LIMIT $top_vcs
),
ranked AS (
    SELECT coalesce(f.vc, '(none)') AS vc, b.jobs, f.queue_delay_s,
           row_number() OVER (PARTITION BY coalesce(f.vc, '(none)') ORDER BY f.queue_delay_s) AS rn,
           count(*) OVER (PARTITION BY coalesce(f.vc, '(none)')) AS n
    FROM job_facts f
    JOIN busiest b ON coalesce(f.vc, '(none)') = b.vc
    WHERE f.queue_delay_s IS NOT NULL
)
SELECT vc, queue_delay_s, rn / n AS cum_share
FROM ranked
WHERE rn = 1 OR rn = n OR rn % greatest(n // 200, 1) = 0
ORDER BY jobs DESC, vc, rn
