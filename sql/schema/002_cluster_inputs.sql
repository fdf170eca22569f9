-- Schema version 2: what real clusters (Slurm, nvidia-smi, DCGM, other public traces)
-- and job logs add to the Philly-shaped core. Every statement is idempotent, so a
-- version-1 store is upgraded in place the next time gca opens it.

-- Jobs: what schedulers other than Philly know. All nullable; Philly leaves them NULL.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS job_name     VARCHAR;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS partition    VARCHAR;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS eligible_at  TIMESTAMP;  -- Slurm Eligible: dependencies and holds released
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS time_limit_s BIGINT;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS gpu_model    VARCHAR;    -- e.g. a100 from gres/gpu:a100=4
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS exit_code    INTEGER;    -- Slurm ExitCode exit:signal, first part
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS exit_signal  INTEGER;    -- ... second part
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS cancelled_by VARCHAR;    -- `CANCELLED by <uid>`: the uid

-- Attempts: per-run facts for schedulers that requeue (each run is an attempt), and the
-- size of attempts whose (machine, GPU) pairs the source does not list (Slurm without
-- GPU indices, Helios/Acme, Alibaba's fractional GPUs). jobs.csv takes num_gpus and
-- num_servers from allocations where they exist, from these columns otherwise.
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS status        VARCHAR;  -- jobs.status vocabulary; NULL: only the job's is known
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS source_status VARCHAR;
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS exit_code     INTEGER;
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS exit_signal   INTEGER;
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS num_gpus      DOUBLE;   -- fractional for Alibaba (gpu_milli)
ALTER TABLE attempts ADD COLUMN IF NOT EXISTS num_nodes     INTEGER;

-- The machines an attempt ran on when the source names them but not the GPUs on each
-- (Slurm NodeList). gpus: GPUs on that machine where known (gres per node), else NULL.
CREATE TABLE IF NOT EXISTS attempt_hosts (
    source     VARCHAR NOT NULL,
    job_id     VARCHAR USING COMPRESSION uncompressed NOT NULL,
    attempt_no INTEGER NOT NULL,
    machine_id VARCHAR NOT NULL,
    gpus       INTEGER,
    file_id    INTEGER NOT NULL
);

-- GPU indices a job was bound to, from a source other than the scheduler's log:
-- `scontrol show job -d` (GRES=gpu:4(IDX:0-3)) or CUDA_VISIBLE_DEVICES printed in a job
-- log. attempt_ref as in job_logs (attempts.source_index); NULL: the job's last attempt
-- (scontrol shows the current run; a requeue rewrites slurm-<jobid>.out).
CREATE TABLE IF NOT EXISTS gpu_bindings (
    source      VARCHAR,               -- NULL: match the job_id in any source
    job_id      VARCHAR NOT NULL,
    attempt_ref INTEGER,
    machine_id VARCHAR,                -- NULL: the binding holds on every host of the attempt
    gpu_index  SMALLINT NOT NULL,
    origin     VARCHAR NOT NULL,       -- scontrol, cuda_visible_devices
    file_id    INTEGER NOT NULL
);

-- Physical GPUs as telemetry describes them, so sources that name a GPU by UUID or
-- PCI bus id join those that use the index. pci_bus_id: lower case, last 12 characters
-- (0000:3b:00.0), the form that joins nvidia-smi and DCGM.
CREATE TABLE IF NOT EXISTS gpu_devices (
    machine_id VARCHAR NOT NULL,
    gpu_index  SMALLINT NOT NULL,
    uuid       VARCHAR,
    pci_bus_id VARCHAR,
    model      VARCHAR,
    file_id    INTEGER NOT NULL
);

-- Measures richer telemetry has beside gpu_samples.util_pct. DCGM's
-- DCGM_FI_PROF_GR_ENGINE_ACTIVE (a 0-1 ratio) is its own measure, never mixed into
-- util_pct (DCGM_FI_DEV_GPU_UTIL, 0-100). MIG instances: gpu_instance_id set, one row per
-- instance (their parent GPU has no util_pct).
ALTER TABLE gpu_sample_details ADD COLUMN IF NOT EXISTS gr_engine_active REAL;
ALTER TABLE gpu_sample_details ADD COLUMN IF NOT EXISTS throttle_reasons VARCHAR;  -- active reasons, comma-separated, or the hex mask
ALTER TABLE gpu_sample_details ADD COLUMN IF NOT EXISTS gpu_instance_id  SMALLINT;

-- What a telemetry tool printed instead of data (`No devices were found`, `Unable to
-- determine the device handle ...`, Xid values from DCGM): kept as events, not parse errors.
CREATE TABLE IF NOT EXISTS gpu_events (
    event_at   TIMESTAMP,
    machine_id VARCHAR,
    gpu_index  SMALLINT,
    kind       VARCHAR NOT NULL,       -- tool_error, xid, ...
    detail     VARCHAR,
    file_id    INTEGER NOT NULL,
    line       BIGINT
);

-- Job logs (stdout/stderr) and what the failure classifier found in each. One row per
-- log file. The job and attempt come from the file's path (its layout); attempt_ref is
-- the attempt's position in the source (attempts.source_index), NULL when the layout
-- does not say (Slurm's slurm-<jobid>.out): then the log belongs to the job's last
-- attempt. The attempt's root cause is the best-ranked classification among its files
-- (sql/queries/attempt_failures.sql).
CREATE TABLE IF NOT EXISTS job_logs (
    job_id           VARCHAR NOT NULL,
    attempt_ref      INTEGER,
    stream           VARCHAR,          -- stdout, stderr, combined
    layout           VARCHAR NOT NULL, -- synth, slurm, pattern
    reason           VARCHAR NOT NULL, -- taxonomy reason; unknown when nothing matched
    category         VARCHAR NOT NULL,
    signature_id     VARCHAR,
    priority         INTEGER,          -- the winning signature's priority: higher wins across an attempt's files
    line_number      BIGINT,
    line             VARCHAR,
    other_signatures VARCHAR[],        -- every other signature that matched, in precedence order
    bytes_read       BIGINT,
    truncated        BOOLEAN,          -- only a head and a tail of the file were read
    file_id          INTEGER NOT NULL
);

UPDATE schema_version SET version = getvariable('migration_version')
WHERE version < getvariable('migration_version');
