-- Schema version 5: the training speed a job log prints (gpucluster_analysis/speed), per
-- log file beside its failure classification. Idempotent: an older store is upgraded in place.
-- The metric is canonical, higher is faster (tflops_per_gpu, mfu_pct, tokens_per_s,
-- samples_per_s, iterations_per_s); statistics are over the run after its warm-up.
ALTER TABLE job_logs ADD COLUMN IF NOT EXISTS speed_metric       VARCHAR;
ALTER TABLE job_logs ADD COLUMN IF NOT EXISTS speed_unit         VARCHAR;
ALTER TABLE job_logs ADD COLUMN IF NOT EXISTS speed_pattern      VARCHAR;  -- the winning pattern of speed/patterns.toml
ALTER TABLE job_logs ADD COLUMN IF NOT EXISTS speed_per_gpu      BOOLEAN;  -- the value is per GPU, else for the whole job
ALTER TABLE job_logs ADD COLUMN IF NOT EXISTS speed_median       DOUBLE;
ALTER TABLE job_logs ADD COLUMN IF NOT EXISTS speed_p25          DOUBLE;
ALTER TABLE job_logs ADD COLUMN IF NOT EXISTS speed_p75          DOUBLE;
ALTER TABLE job_logs ADD COLUMN IF NOT EXISTS speed_samples      INTEGER;  -- samples the statistics are over
ALTER TABLE job_logs ADD COLUMN IF NOT EXISTS speed_samples_seen INTEGER;  -- all samples, warm-up included

UPDATE schema_version SET version = getvariable('migration_version')
WHERE version < getvariable('migration_version');
