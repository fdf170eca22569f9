-- job_activity_by_attributes: one row per job with SM-activity samples: its mean SM
-- activity and placement, for the report's packed-vs-spread test (run in Python on these
-- per-job values, never on samples). Needs the temp table job_facts. Parameters: none.
-- Output: placement, num_gpus, mean_sm_active_pct, mean_gpu_util_pct.
-- Stage: result
SELECT placement, num_gpus, mean_sm_active_pct, mean_gpu_util_pct
FROM job_facts
WHERE mean_sm_active_pct IS NOT NULL
ORDER BY source, job_id
