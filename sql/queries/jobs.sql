-- jobs: one row per job, the jobs.csv contract (docs/domain.md, "Per-job table").
-- Needs the temp tables attempt_sizes, job_keys, attempt_attribution, job_gpu_util,
-- attempt_failures and attempt_causes (the log's side of failure_reason, below) and
-- replay_job_waits (the replay's split of each job's first wait by cause, and its retry waits;
-- macro wait_cause_columns() of db/fact_macros.py)
-- and attributed_activity (DCGM profiling samples per job: mean_sm_active_pct and
-- mean_tensor_active_pct are 100 x their means, empty where none was measured) and
-- attempt_speeds (speed_*: the training speed of the job's last attempt that printed one)
-- and job_colocation (shares_server, after the jobs.csv columns).
-- failure_reason: for a job that failed or was killed, the log's root cause (attempt_failures'
-- job_root_cause row) combined with what the scheduler's record says (macros
-- scheduler_reason, job_failure_reason, failure_evidence of db/fact_macros.py, from
-- scheduler_evidence.py); exit_code and exit_signal (its name) as the scheduler gave them.
-- Parameters: none. Times are naive UTC timestamps; the writer formats them as ISO 8601 Z.
-- Attempt sizes come from the temp table attempt_sizes, num_gpus / num_servers from the
-- temp table job_keys (defined there once). gpu_time_s is unknown (empty) when a timed
-- attempt's GPU count is; rounded to milliseconds (fractional GPUs).
-- Queueing starts at eligible_at where the source has it (Slurm: a job held or waiting on
-- a dependency is not queueing for resources), else at submit_at; queue_basis says which.
-- attribution: the least precise way any of the job's timed attempts had its samples found
-- (temp table attempt_attribution); none when no timed attempt names a machine; NULL
-- when no attempt has both times.
-- After the jobs.csv columns, the job-level attributes the report groups by (this query's
-- rows are the temp table job_facts, which the figure queries join): size_bucket, size_order
-- (1..7, for sorting) and placement ('packed' = 1 server, 'spread' = 2+ servers, NULL without
-- an allocation) as the temp table job_keys defines them, shares_server (temp table
-- job_colocation; NULL for jobs without a timed allocation) and job_key (job_keys).
-- Stage: after_replay, as job_facts
WITH per_job AS (
    SELECT source, job_id,
        count(*) AS attempts,
        min(start_at) AS first_start_at,
        max(end_at) AS end_at,
        CASE WHEN NOT bool_or(gpus IS NULL AND start_at IS NOT NULL AND end_at IS NOT NULL)
             THEN round(sum((epoch(end_at) - epoch(start_at)) * gpus)
                            FILTER (WHERE start_at IS NOT NULL AND end_at IS NOT NULL), 3)
        END AS gpu_time_s
    FROM attempt_sizes
    GROUP BY source, job_id
),
-- the jobs that failed or were killed, with what their scheduler's record says of why
-- and the log's root cause: of the last failed attempt that has a log (attempt_failures), else
-- for a killed job the cause its final attempt's log names (user_kill: any other makes the
-- attempt a failed one); a killed job is no failure, so a log that names nothing gives it no reason
ended AS (
    SELECT j.source, j.job_id,
           scheduler_reason(j.source_status, j.exit_code, j.exit_signal, j.cancelled_by, j.user_uid) AS scheduler_reason,
           coalesce(f.reason, CASE WHEN c.reason NOT IN ('unknown', 'none') THEN c.reason END) AS log_reason
    FROM jobs j
    LEFT JOIN attempt_failures f ON f.source = j.source AND f.job_id = j.job_id AND f.job_root_cause
    LEFT JOIN attempt_causes c
        ON c.source = j.source AND c.job_id = j.job_id AND c.from_last = 1 AND c.has_log AND j.status = 'killed'
    WHERE j.status IN ('failed', 'timeout', 'node_fail', 'preempted', 'killed')
),
-- (rows of one attribution rank alike: no need to take them distinct first)
attributed AS (
    SELECT source, job_id,
           arg_max(attribution, CASE attribution WHEN 'scheduler' THEN 1 WHEN 'scontrol' THEN 2
               WHEN 'cuda_visible_devices' THEN 3 WHEN 'whole_node' THEN 4 WHEN 'node_level' THEN 5
               ELSE 0 END) AS attribution  -- none only when no timed attempt has a placement
    FROM attempt_attribution
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
    k.num_gpus,
    k.num_servers,
    epoch(p.first_start_at) - epoch(coalesce(j.eligible_at, j.submit_at)) AS queue_delay_s,
    epoch(p.end_at) - epoch(p.first_start_at) AS run_time_s,
    p.gpu_time_s,
    u.mean_gpu_util_pct,
    coalesce(u.util_samples, 0) AS util_samples,
    job_failure_reason(e.log_reason, e.scheduler_reason) AS failure_reason,
    reason_category(job_failure_reason(e.log_reason, e.scheduler_reason)) AS failure_category,
    j.eligible_at AS eligible_time,
    CASE WHEN j.eligible_at IS NOT NULL THEN 'eligible' WHEN j.submit_at IS NOT NULL THEN 'submit' END AS queue_basis,
    t.attribution,
    -- wait_<cause>_s of each wait cause, in their order (replay_job_waits' columns; wait_causes.py)
    COLUMNS(lambda c: list_contains(wait_cause_columns(), c)),
    w.wait_retry_s,
    100.0 * v.sm_sum / nullif(v.sm_samples, 0) AS mean_sm_active_pct,
    100.0 * v.tensor_sum / nullif(v.tensor_samples, 0) AS mean_tensor_active_pct,
    sp.speed_metric,
    sp.speed_median,
    sp.speed_unit,
    j.exit_code,
    signal_name(j.exit_signal) AS exit_signal,
    CASE WHEN e.job_id IS NOT NULL THEN failure_evidence(e.log_reason, e.scheduler_reason) END AS failure_evidence,
    k.size_bucket,
    k.size_order,
    k.placement,
    c.shares_server,
    k.job_key
FROM jobs j
LEFT JOIN per_job p USING (source, job_id)
LEFT JOIN job_keys k USING (source, job_id)
LEFT JOIN job_gpu_util u USING (source, job_id)
LEFT JOIN attributed t USING (source, job_id)
LEFT JOIN replay_job_waits w USING (source, job_id)
LEFT JOIN attributed_activity v USING (source, job_id)
LEFT JOIN attempt_speeds sp ON sp.source = j.source AND sp.job_id = j.job_id AND sp.is_last_with_speed
LEFT JOIN ended e USING (source, job_id)
LEFT JOIN job_colocation c USING (source, job_id)
ORDER BY j.submit_at NULLS LAST, j.source, j.job_id
