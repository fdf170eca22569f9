-- gpu_waste: who leaves allocated GPUs unused, per user, per VC and per week (the report's
-- "Who wastes GPUs"; Jobstats and Job Defense Shield rank users the same way).
-- Over the selected jobs with GPU time (temp table job_facts, gpu_time_s > 0), each job's GPU
-- time is split by its mean utilization (jobs.csv mean_gpu_util_pct, the mean of its own
-- samples, taken as the mean over all of its GPU time as the Philly study does):
--   used    = GPU time x mean utilization / 100, unused = GPU time - used (measured jobs only);
--   idle    = the GPU time of jobs whose every sample read 0% (they never used their GPUs);
--   unknown = the GPU time of jobs without a utilization sample: neither used nor idle.
-- SM activity (DCGM profiling) is weighted the same way, over the jobs that have it.
-- Sums are exact: each job's times are integer GPU-milliseconds (a float sum's digits would
-- depend on the order threads add in; the same store must give the same bytes).
-- Ranking: a user or VC is ranked, by unused GPU-hours, only with at least $waste_floor_pct
-- percent of the selection's GPU-hours (so that one small user's single job is not named) and
-- some of them measured (GPU time of unknown use is no evidence of waste).
-- Weeks are the week (Monday, UTC) of a job's first start.
-- Parameters: $waste_floor_pct (DOUBLE).
-- Output: scope ('user', 'vc', 'week'), source, name (user, VC, or week's Monday as YYYY-MM-DD;
-- empty where the source names none), jobs, gpu_hours, gpu_hours_pct (of all the selection's),
-- measured_gpu_hours, unknown_gpu_hours, mean_gpu_util_pct (GPU-hour-weighted over the measured),
-- unused_gpu_hours, unused_pct (of measured_gpu_hours), idle_jobs, idle_gpu_hours,
-- sm_gpu_hours (with SM activity), mean_sm_active_pct (GPU-hour-weighted over those),
-- rank (1 = most unused GPU-hours; empty for weeks and for users and VCs under the floor).
-- Stage: result
WITH timed AS (
    SELECT source, "user", vc, first_start_time,
           CAST(round(gpu_time_s * 1000) AS BIGINT) AS gpu_ms,
           mean_gpu_util_pct AS util,
           mean_sm_active_pct AS sm
    FROM job_facts
    WHERE gpu_time_s > 0
),
per_job AS (
    SELECT source, "user", vc, strftime(date_trunc('week', first_start_time), '%Y-%m-%d') AS week,
           gpu_ms,
           CASE WHEN util IS NOT NULL THEN gpu_ms ELSE 0 END AS measured_ms,
           coalesce(CAST(round(gpu_ms * util / 100) AS BIGINT), 0) AS used_ms,
           CASE WHEN util = 0 THEN 1 ELSE 0 END AS idle_job,
           CASE WHEN util = 0 THEN gpu_ms ELSE 0 END AS idle_ms,
           CASE WHEN sm IS NOT NULL THEN gpu_ms ELSE 0 END AS sm_ms,
           coalesce(CAST(round(gpu_ms * sm / 100) AS BIGINT), 0) AS sm_used_ms
    FROM timed
),
grouped AS (
    SELECT CASE WHEN grouping("user") = 0 THEN 'user' WHEN grouping(vc) = 0 THEN 'vc' ELSE 'week' END AS scope,
           source,
           coalesce("user", vc, week) AS name,
           count(*) AS jobs,
           sum(gpu_ms) AS gpu_ms, sum(measured_ms) AS measured_ms, sum(used_ms) AS used_ms,
           sum(idle_job) AS idle_jobs, sum(idle_ms) AS idle_ms, sum(sm_ms) AS sm_ms, sum(sm_used_ms) AS sm_used_ms
    FROM per_job
    GROUP BY GROUPING SETS ((source, "user"), (source, vc), (source, week))
),
total AS (
    SELECT sum(gpu_ms) AS gpu_ms FROM per_job
),
shares AS (
    SELECT g.*, 100.0 * g.gpu_ms / t.gpu_ms AS gpu_hours_pct
    FROM grouped g CROSS JOIN total t
),
ranked AS (
    SELECT *, scope <> 'week' AND name IS NOT NULL AND measured_ms > 0 AND gpu_hours_pct >= $waste_floor_pct AS rankable
    FROM shares
)
SELECT scope, source, name, CAST(jobs AS BIGINT) AS jobs,
       gpu_ms / 3600000.0 AS gpu_hours,
       gpu_hours_pct,
       measured_ms / 3600000.0 AS measured_gpu_hours,
       (gpu_ms - measured_ms) / 3600000.0 AS unknown_gpu_hours,
       100.0 * used_ms / nullif(measured_ms, 0) AS mean_gpu_util_pct,
       (measured_ms - used_ms) / 3600000.0 AS unused_gpu_hours,
       100.0 * (measured_ms - used_ms) / nullif(measured_ms, 0) AS unused_pct,
       CAST(idle_jobs AS BIGINT) AS idle_jobs,
       idle_ms / 3600000.0 AS idle_gpu_hours,
       sm_ms / 3600000.0 AS sm_gpu_hours,
       100.0 * sm_used_ms / nullif(sm_ms, 0) AS mean_sm_active_pct,
       CASE WHEN rankable THEN row_number() OVER (
           PARTITION BY scope, rankable ORDER BY measured_ms - used_ms DESC, gpu_ms DESC, source, name)
       END AS rank
FROM ranked
ORDER BY CASE scope WHEN 'user' THEN 1 WHEN 'vc' THEN 2 ELSE 3 END,
         rank NULLS LAST, CASE WHEN scope = 'week' THEN name END, measured_ms - used_ms DESC, source, name
