-- Schema version 4: what the GPUs really did (DCGM's profiling fields), the workload labels
-- telemetry carries, and pulls from a live Prometheus. Every statement is idempotent, so an
-- older store is upgraded in place.

-- DCGM profiling fields (DCGM_FI_PROF_*), as DCGM gives them: activities are ratios 0-1 of
-- the sample interval (kept apart from util_pct, nvidia-smi's "any kernel ran"), traffic in
-- bytes per second. Per GPU, or per MIG instance (gpu_instance_id).
ALTER TABLE gpu_sample_details ADD COLUMN IF NOT EXISTS sm_active       REAL;    -- DCGM_FI_PROF_SM_ACTIVE
ALTER TABLE gpu_sample_details ADD COLUMN IF NOT EXISTS sm_occupancy    REAL;    -- DCGM_FI_PROF_SM_OCCUPANCY
ALTER TABLE gpu_sample_details ADD COLUMN IF NOT EXISTS tensor_active   REAL;    -- DCGM_FI_PROF_PIPE_TENSOR_ACTIVE
ALTER TABLE gpu_sample_details ADD COLUMN IF NOT EXISTS fp64_active     REAL;    -- DCGM_FI_PROF_PIPE_FP64_ACTIVE
ALTER TABLE gpu_sample_details ADD COLUMN IF NOT EXISTS fp32_active     REAL;    -- DCGM_FI_PROF_PIPE_FP32_ACTIVE
ALTER TABLE gpu_sample_details ADD COLUMN IF NOT EXISTS fp16_active     REAL;    -- DCGM_FI_PROF_PIPE_FP16_ACTIVE
ALTER TABLE gpu_sample_details ADD COLUMN IF NOT EXISTS dram_active     REAL;    -- DCGM_FI_PROF_DRAM_ACTIVE
ALTER TABLE gpu_sample_details ADD COLUMN IF NOT EXISTS pcie_tx_bytes   DOUBLE;  -- DCGM_FI_PROF_PCIE_TX_BYTES, bytes/s
ALTER TABLE gpu_sample_details ADD COLUMN IF NOT EXISTS pcie_rx_bytes   DOUBLE;  -- DCGM_FI_PROF_PCIE_RX_BYTES
ALTER TABLE gpu_sample_details ADD COLUMN IF NOT EXISTS nvlink_tx_bytes DOUBLE;  -- DCGM_FI_PROF_NVLINK_TX_BYTES
ALTER TABLE gpu_sample_details ADD COLUMN IF NOT EXISTS nvlink_rx_bytes DOUBLE;  -- DCGM_FI_PROF_NVLINK_RX_BYTES

-- Which workload a GPU served, as telemetry labels say (dcgm-exporter's Kubernetes pod
-- mapping, its Slurm hpc_job mapping): one row per (GPU, labels) and stretch of samples.
CREATE TABLE IF NOT EXISTS gpu_workload_labels (
    machine_id      VARCHAR NOT NULL,
    gpu_index       SMALLINT,
    gpu_instance_id SMALLINT,           -- MIG instance, NULL for a whole GPU
    first_at        TIMESTAMP NOT NULL, -- first and last sample carrying these labels
    last_at         TIMESTAMP NOT NULL,
    pod             VARCHAR,
    namespace       VARCHAR,
    container       VARCHAR,
    hpc_job         VARCHAR,            -- the Slurm job id dcgm-exporter's HPC job mapping names
    file_id         INTEGER NOT NULL
);

-- Pulls from a live Prometheus (gca ingest prometheus+http://...): each stored time chunk
-- of a query, so that a pull that stopped resumes after its last stored chunk and the same
-- range is never stored twice. Each chunk is also an ingested_files row (file_id).
CREATE TABLE IF NOT EXISTS prometheus_chunks (
    server    VARCHAR NOT NULL,         -- base URL, never with credentials or headers
    query     VARCHAR NOT NULL,
    start_at  TIMESTAMP NOT NULL,
    end_at    TIMESTAMP NOT NULL,
    step_s    DOUBLE NOT NULL,
    series    BIGINT NOT NULL,
    samples   BIGINT NOT NULL,
    file_id   INTEGER NOT NULL,
    pulled_at TIMESTAMP NOT NULL
);

UPDATE schema_version SET version = getvariable('migration_version')
WHERE version < getvariable('migration_version');
