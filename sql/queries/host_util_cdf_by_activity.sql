-- host_util_cdf_by_activity: the distribution of host CPU utilization and memory used
-- (mem used % = (total - free) / total) per host sample, split by whether a job of this
-- store held a GPU of that machine at that time (temp table job_machine_windows; the same
-- start <= t < end rule and hour-bucket equi-join as the GPU attribution). 1-percent bins.
-- The windows of all jobs on a machine are merged first, so a sample matches at most one
-- window and the LEFT JOIN neither drops nor repeats a sample. Host samples of the report's
-- period (temp view period_host_samples: analyze/selection.py).
-- Parameters: none.
-- Output: metric ('cpu_util_pct', 'mem_used_pct'), job_running (BOOLEAN), util_bin (0..100),
-- samples, value_sum (exact sum of the values in the bin), cum_share.
-- Stage: result, heavy, kept
WITH telemetry AS (
    SELECT min(sample_at) AS first_at, max(sample_at) AS last_at FROM period_host_samples
),
ordered AS (
    SELECT machine_id, start_at, end_at,
           max(end_at) OVER (PARTITION BY machine_id ORDER BY start_at, end_at
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS previous_end
    FROM job_machine_windows
),
islands AS (
    SELECT *, sum(CASE WHEN previous_end IS NULL OR start_at > previous_end THEN 1 ELSE 0 END)
                  OVER (PARTITION BY machine_id ORDER BY start_at, end_at) AS island
    FROM ordered
),
busy AS (
    SELECT machine_id, min(start_at) AS start_at, max(end_at) AS end_at
    FROM islands GROUP BY machine_id, island
),
busy_hours AS (
    SELECT b.machine_id, b.start_at, b.end_at,
           unnest(range(epoch_us(greatest(b.start_at, t.first_at)) // 3600000000,
                        epoch_us(least(b.end_at, t.last_at)) // 3600000000 + 1)) AS hour
    FROM busy b CROSS JOIN telemetry t
    WHERE b.end_at > t.first_at AND b.start_at <= t.last_at
),
marked AS (
    SELECT s.cpu_util_pct,
           100.0 * (s.mem_total_kib - s.mem_free_kib) / nullif(s.mem_total_kib, 0) AS mem_used_pct,
           w.machine_id IS NOT NULL AS job_running
    FROM period_host_samples s
    LEFT JOIN busy_hours w
      ON s.machine_id = w.machine_id AND epoch_us(s.sample_at) // 3600000000 = w.hour
     AND s.sample_at >= w.start_at AND s.sample_at < w.end_at
),
pairs AS (
    -- both metrics binned in one pass (at most 2 x ~102 x ~102 groups); raw integer bins
    -- here, clamped into 0..100 below on the grouped rows: cheaper than per sample
    SELECT job_running,
           TRY_CAST(floor(cpu_util_pct) AS INTEGER) AS cpu_raw,
           TRY_CAST(floor(mem_used_pct) AS INTEGER) AS mem_raw,
           count(cpu_util_pct) AS cpu_n,
           count(mem_used_pct) AS mem_n,
           -- exact sums in integer billionths, as attributed_util's (readers store finite 0-100)
           sum(TRY_CAST(cpu_util_pct * 1000000000 AS BIGINT)) AS cpu_nano,
           sum(TRY_CAST(mem_used_pct * 1000000000 AS BIGINT)) AS mem_nano
    FROM marked
    GROUP BY ALL
),
binned AS (
    -- a value that is present but does not fit an INTEGER (NaN, inf) lands in bin 100
    SELECT 'cpu_util_pct' AS metric, job_running,
           CASE WHEN cpu_raw IS NULL THEN 100 ELSE least(greatest(cpu_raw, 0), 100) END AS util_bin,
           sum(cpu_n) AS samples, coalesce(sum(cpu_nano) / 1e9, 0) AS value_sum
    FROM pairs WHERE cpu_n > 0 GROUP BY ALL
    UNION ALL
    SELECT 'mem_used_pct', job_running,
           CASE WHEN mem_raw IS NULL THEN 100 ELSE least(greatest(mem_raw, 0), 100) END,
           sum(mem_n), coalesce(sum(mem_nano) / 1e9, 0)
    FROM pairs WHERE mem_n > 0 GROUP BY ALL
)
SELECT metric, job_running, CAST(util_bin AS SMALLINT) AS util_bin, CAST(samples AS BIGINT) AS samples, value_sum,
       sum(samples) OVER (PARTITION BY metric, job_running ORDER BY util_bin)
           / sum(samples) OVER (PARTITION BY metric, job_running) AS cum_share
FROM binned
ORDER BY metric, job_running DESC, util_bin
