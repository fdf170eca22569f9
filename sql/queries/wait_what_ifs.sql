-- wait_what_ifs: what a scheduler change would have saved, from the same replay
-- (temp table replay_job_waits), first-order: each job alone, every other job as it was.
-- Locality relaxed after T minutes (jobs of more than 8 GPUs, sources that name machines):
-- the job starts at the first instant after T minutes of waiting when its GPUs were free
-- in total and it was held back by locality alone (fragmentation). Borrowing: the job
-- starts at the first instant of fair-share waiting when a placement existed and other
-- VCs left enough of their quotas idle to cover what it was over by.
-- Needs the temp table replay_job_waits.
-- Parameters: none.
-- Output: what_if, what_if_order, jobs_considered (started jobs the change applies to),
-- jobs_helped (saved > 0), wait_gpu_hours (their first waits), saved_gpu_hours, saved_pct,
-- saved_hours (per-job waiting, not weighted by GPUs).
-- Stage: result
WITH started AS (
    -- exact decimals (the replay rounds to milliseconds), so the sums are the same bytes every run
    SELECT CAST(gpus AS DECIMAL(18, 3)) AS gpus,
           -- the causes' seconds added in their order (wait_cause_columns()), an unknown one as 0
           CAST(list_reduce(list_transform([*COLUMNS(lambda c: list_contains(wait_cause_columns(), c))],
                                           lambda s: coalesce(s, 0)), lambda a, b: a + b)
                AS DECIMAL(18, 3)) AS wait_total_s,
           CAST(saved_relaxed_after_0min_s AS DECIMAL(18, 3)) AS saved_relaxed_after_0min_s,
           CAST(saved_relaxed_after_10min_s AS DECIMAL(18, 3)) AS saved_relaxed_after_10min_s,
           CAST(saved_relaxed_after_60min_s AS DECIMAL(18, 3)) AS saved_relaxed_after_60min_s,
           CAST(saved_borrowing_s AS DECIMAL(18, 3)) AS saved_borrowing_s
    FROM replay_job_waits WHERE started AND wait_other_s IS NOT NULL
),
cases AS (
    SELECT 'locality relaxed at once (jobs > 8 GPUs)' AS what_if, 1 AS what_if_order,
           saved_relaxed_after_0min_s AS saved_s, wait_total_s, gpus FROM started WHERE saved_relaxed_after_0min_s IS NOT NULL
    UNION ALL
    SELECT 'locality relaxed after 10 min (jobs > 8 GPUs)', 2, saved_relaxed_after_10min_s, wait_total_s, gpus
    FROM started WHERE saved_relaxed_after_10min_s IS NOT NULL
    UNION ALL
    SELECT 'locality relaxed after 60 min (jobs > 8 GPUs)', 3, saved_relaxed_after_60min_s, wait_total_s, gpus
    FROM started WHERE saved_relaxed_after_60min_s IS NOT NULL
    UNION ALL
    SELECT 'borrowing quota other VCs left idle', 4, saved_borrowing_s, wait_total_s, gpus
    FROM started WHERE saved_borrowing_s IS NOT NULL
)
SELECT what_if, what_if_order,
       count(*) AS jobs_considered,
       count(*) FILTER (WHERE saved_s > 0) AS jobs_helped,
       CAST(sum(wait_total_s * gpus) AS DOUBLE) / 3600.0 AS wait_gpu_hours,
       CAST(sum(saved_s * gpus) AS DOUBLE) / 3600.0 AS saved_gpu_hours,
       100.0 * CAST(sum(saved_s * gpus) AS DOUBLE) / nullif(CAST(sum(wait_total_s * gpus) AS DOUBLE), 0) AS saved_pct,
       CAST(sum(saved_s) AS DOUBLE) / 3600.0 AS saved_hours
FROM cases
GROUP BY what_if, what_if_order
ORDER BY what_if_order
