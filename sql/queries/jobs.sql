-- jobs: one row per job, the jobs.csv contract (docs/domain.md, "Per-job table").
-- Needs the temp tables job_gpu_util (sql/queries/job_gpu_util.sql) and attempt_failures
-- (sql/queries/attempt_failures.sql: failure_reason/category are its job_root_cause row's).
-- Parameters: none. Times are naive UTC timestamps; the writer formats them as ISO 8601 Z.
WITH sized AS (
    SELECT source, job_id, attempt_no, count(*) AS gpus, count(DISTINCT machine_id) AS servers
    FROM allocations GROUP BY source, job_id, attempt_no
),
per_attempt AS (
    SELECT a.source, a.job_id, a.attempt_no, a.start_at, a.end_at, s.gpus, s.servers
    FROM attempts a LEFT JOIN sized s USING (source, job_id, attempt_no)
),
per_job AS (
    SELECT source, job_id,
        count(*) AS attempts,
        min(start_at) AS first_start_at,
        max(end_at) AS end_at,
        arg_min(gpus, attempt_no) FILTER (WHERE gpus IS NOT NULL) AS num_gpus,
        arg_min(servers, attempt_no) FILTER (WHERE gpus IS NOT NULL) AS num_servers,
        sum((epoch(end_at) - epoch(start_at)) * coalesce(gpus, 0))
            FILTER (WHERE start_at IS NOT NULL AND end_at IS NOT NULL) AS gpu_time_s
    FROM per_attempt
    GROUP BY source, job_id
)
SELECT
    j.job_id,
    j.source,
    j.user_name AS "user",
    j.vc,
    j.status,
    j.submit_at AS submit_time,
    p.first_start_at AS first_start_time,
    p.end_at AS end_time,
    coalesce(p.attempts, 0) AS attempts,
    p.num_gpus,
    p.num_servers,
    epoch(p.first_start_at) - epoch(j.submit_at) AS queue_delay_s,
    epoch(p.end_at) - epoch(p.first_start_at) AS run_time_s,
    p.gpu_time_s,
    u.mean_gpu_util_pct,
    coalesce(u.util_samples, 0) AS util_samples,
    f.reason AS failure_reason,
    f.category AS failure_category
FROM jobs j
LEFT JOIN per_job p USING (source, job_id)
LEFT JOIN job_gpu_util u USING (source, job_id)
LEFT JOIN attempt_failures f ON f.source = j.source AND f.job_id = j.job_id AND f.job_root_cause
ORDER BY j.submit_at NULLS LAST, j.source, j.job_id
