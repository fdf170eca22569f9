-- attempt_speeds: the training speed each attempt's logs print (job_logs.speed_*, from
-- gpucluster_analysis/speed), one row per attempt that printed one, with what the
-- report's speed analysis groups by: the job family (same user, job name and GPU count;
-- no job name, as in Philly: same user and GPU count), speed per GPU and placement.
-- Logs map to attempts as the temp table log_attempts says (the mapping attempt_failures
-- uses). Of an attempt's files, the one with the most samples after warm-up wins (then the
-- lower file_id). Needs the temp tables attempt_sizes and log_attempts.
-- Parameters: none.
-- Output: source, job_id, attempt_no, user, family (text key), gpus, servers, placement
-- (packed = 1 server, spread = 2+), speed_metric, speed_unit, speed_per_gpu, speed_median,
-- speed_p25, speed_p75, speed_samples, speed_gpu (speed per GPU: the median divided by the
-- attempt's GPUs unless the metric is already per GPU; NULL where GPUs are unknown or 0),
-- is_last_with_speed (the job's last attempt in time that printed a speed: jobs.csv's).
-- Stage: selected
WITH log_speeds AS (
    -- each log that printed a speed, with the attempt it belongs to
    SELECT source, job_id, attempt_no, file_id, speed_metric, speed_unit, speed_per_gpu,
           speed_median, speed_p25, speed_p75, speed_samples
    FROM log_attempts
    WHERE speed_median IS NOT NULL
),
best AS (
    SELECT * EXCLUDE (rank) FROM (
        SELECT *, row_number() OVER (PARTITION BY source, job_id, attempt_no
                                     ORDER BY speed_samples DESC NULLS LAST, file_id) AS rank
        FROM log_speeds
    ) WHERE rank = 1
)
SELECT b.source, b.job_id, b.attempt_no, j.user_name AS "user",
       concat_ws(' / ', coalesce(j.user_name, '?'), j.job_name, CAST(s.gpus AS VARCHAR) || ' GPUs', b.speed_metric)
           AS family,
       s.gpus, s.servers,
       CASE WHEN s.servers IS NULL THEN NULL WHEN s.servers = 1 THEN 'packed' ELSE 'spread' END AS placement,
       b.speed_metric, b.speed_unit, b.speed_per_gpu, b.speed_median, b.speed_p25, b.speed_p75, b.speed_samples,
       CASE WHEN b.speed_per_gpu THEN b.speed_median WHEN s.gpus > 0 THEN b.speed_median / s.gpus END AS speed_gpu,
       row_number() OVER (PARTITION BY b.source, b.job_id
                          ORDER BY coalesce(s.start_at, s.end_at) DESC NULLS LAST, b.attempt_no DESC) = 1
           AS is_last_with_speed
FROM best b
JOIN jobs j USING (source, job_id)
LEFT JOIN attempt_sizes s USING (source, job_id, attempt_no)
