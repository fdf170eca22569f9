-- period_sample_totals: how many GPU and host samples the report's period holds, and the
-- GPU samples' first and last time (temp views period_gpu_samples, period_host_samples:
-- analyze/selection.py). The scan of the samples behind overview_totals, computed once per
-- report as a temp table (under --engine spark, in Spark).
-- Parameters: none.
-- Output: gpu_samples, gpu_samples_first_at, gpu_samples_last_at, host_samples (one row).
-- Stage: selected, heavy
SELECT g.gpu_samples, g.gpu_samples_first_at, g.gpu_samples_last_at, h.host_samples
FROM (SELECT count(*) AS gpu_samples, min(sample_at) AS gpu_samples_first_at, max(sample_at) AS gpu_samples_last_at
      FROM period_gpu_samples) g
CROSS JOIN (SELECT count(*) AS host_samples FROM period_host_samples) h
