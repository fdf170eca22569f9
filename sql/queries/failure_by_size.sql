-- failure_by_size: failed attempts (trials) and the GPU time they lost per job size bucket
-- (job_keys.size_bucket: GPUs of the job's first allocated attempt) and root cause.
-- Needs the temp tables failure_trials and job_keys. Parameters: none.
-- Output: size_bucket, size_order, category, reason ('no log' for trials without a log),
-- trials, size_trials_pct (of the bucket's trials), gpu_hours_lost, size_gpu_time_lost_pct
-- (of the bucket's lost GPU time), rtf_p50_s.
-- Stage: result
WITH labelled AS (
    SELECT k.size_bucket, k.size_order, f.gpu_time_lost_s, f.runtime_to_failure_s,
           failure_label(f.has_evidence, f.reason, f.category) AS category,
           failure_label(f.has_evidence, f.reason, f.reason) AS reason
    FROM failure_trials f
    JOIN job_keys k USING (source, job_id)
)
SELECT size_bucket, size_order, category, reason,
       count(*) AS trials,
       100.0 * count(*) / sum(count(*)) OVER (PARTITION BY size_bucket) AS size_trials_pct,
       coalesce(sum(gpu_time_lost_s), 0) / 3600.0 AS gpu_hours_lost,
       100.0 * coalesce(sum(gpu_time_lost_s), 0)
           / nullif(sum(sum(gpu_time_lost_s)) OVER (PARTITION BY size_bucket), 0) AS size_gpu_time_lost_pct,
       quantile_cont(runtime_to_failure_s, 0.5) AS rtf_p50_s
FROM labelled
GROUP BY size_bucket, size_order, category, reason
ORDER BY size_order, gpu_hours_lost DESC, trials DESC, reason
