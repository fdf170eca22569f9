-- Schema version 1: the canonical store. Every scheduler and telemetry format maps into these
-- tables; every time is a naive TIMESTAMP holding UTC (columns ending in _at).
-- Each row records the ingested file it came from (file_id), so that
-- `gca ingest --replace` can take back exactly what one file contributed.

CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);

-- One row per ingested file. content_hash makes re-ingesting the same bytes a no-op.
CREATE TABLE IF NOT EXISTS ingested_files (
    file_id      INTEGER PRIMARY KEY,
    path         VARCHAR NOT NULL,
    size_bytes   BIGINT NOT NULL,
    content_hash VARCHAR NOT NULL,    -- sha256, hex
    format       VARCHAR NOT NULL,    -- e.g. philly_job_log, philly_gpu_util
    time_zone    VARCHAR,             -- zone the file's zone-less times were read in
    rows_loaded  BIGINT NOT NULL,     -- rows stored in canonical tables
    rejects      BIGINT NOT NULL,
    seconds      DOUBLE NOT NULL,
    ingested_at  TIMESTAMP NOT NULL
);

-- Malformed input rows: recorded and counted, never silently dropped.
CREATE TABLE IF NOT EXISTS rejects (
    file_id INTEGER NOT NULL,
    line    BIGINT,                   -- 1-based line in the file, where known
    reason  VARCHAR NOT NULL,
    text    VARCHAR                   -- the offending text, truncated
);

-- One row per job as the scheduler knows it.
-- Job ids are stored uncompressed here and in the other tables a job has a row in per ingest
-- (attempts, attempt_hosts, sacct_records): nearly all distinct, they cost DuckDB's string
-- compression ~0.2 CPU-s per million rows written, a tenth of a million-job sacct ingest in
-- all, to save ~6 MB each (benchmarks/RESULTS.md, session 12). An older store keeps its own.
CREATE TABLE IF NOT EXISTS jobs (
    source        VARCHAR NOT NULL,   -- input family: philly, slurm, ...
    job_id        VARCHAR USING COMPRESSION uncompressed NOT NULL,  -- the scheduler's id, as in the source
    user_name     VARCHAR,
    vc            VARCHAR,            -- virtual cluster / account / partition
    status        VARCHAR NOT NULL,   -- passed failed killed timeout node_fail preempted running pending unknown
    source_status VARCHAR,            -- the status text as the source wrote it
    submit_at     TIMESTAMP,
    file_id       INTEGER NOT NULL
);

-- One row per attempt (one gang placement). attempt_no orders the attempts of
-- a job chronologically by start (attempts without a start last), 0-based;
-- source_index keeps the order the source listed them in.
CREATE TABLE IF NOT EXISTS attempts (
    source       VARCHAR NOT NULL,
    job_id       VARCHAR USING COMPRESSION uncompressed NOT NULL,
    attempt_no   INTEGER NOT NULL,
    source_index INTEGER NOT NULL,
    start_at     TIMESTAMP,
    end_at       TIMESTAMP,
    file_id      INTEGER NOT NULL
);

-- The (machine, GPU) pairs an attempt was given.
CREATE TABLE IF NOT EXISTS allocations (
    source     VARCHAR NOT NULL,
    job_id     VARCHAR NOT NULL,
    attempt_no INTEGER NOT NULL,
    machine_id VARCHAR NOT NULL,
    gpu_index  SMALLINT NOT NULL,
    file_id    INTEGER NOT NULL
);

-- Machines as the cluster lists them. The capacity observed in the data
-- (GPU indices seen in allocations and samples) is the view machine_capacity.
CREATE TABLE IF NOT EXISTS machines (
    machine_id    VARCHAR NOT NULL,
    listed_gpus   INTEGER,
    gpu_memory_gb DOUBLE,
    file_id       INTEGER NOT NULL
);

-- GPU telemetry in long form: one row per GPU per sample time. Kept to the
-- columns every source has: hundreds of millions of rows are written per
-- trace, and each extra (mostly NULL) column made that ~50% slower.
CREATE TABLE IF NOT EXISTS gpu_samples (
    sample_at     TIMESTAMP NOT NULL,
    machine_id    VARCHAR NOT NULL,
    gpu_index     SMALLINT NOT NULL,
    util_pct      DOUBLE,             -- SM/GPU utilization, 0-100
    file_id       INTEGER NOT NULL
);

-- What richer sources (nvidia-smi, DCGM) report beside utilization, for the
-- same (machine_id, gpu_index, sample_at) as a gpu_samples row.
CREATE TABLE IF NOT EXISTS gpu_sample_details (
    sample_at     TIMESTAMP NOT NULL,
    machine_id    VARCHAR NOT NULL,
    gpu_index     SMALLINT NOT NULL,
    mem_util_pct  REAL,
    mem_used_mib  REAL,
    mem_total_mib REAL,
    power_w       REAL,
    temp_c        REAL,
    sm_clock_mhz  REAL,
    file_id       INTEGER NOT NULL
);

-- Host telemetry: CPU and memory of a machine per sample time. A source that
-- reports only one of them leaves the others NULL.
CREATE TABLE IF NOT EXISTS host_samples (
    sample_at     TIMESTAMP NOT NULL,
    machine_id    VARCHAR NOT NULL,
    cpu_util_pct  DOUBLE,
    mem_total_kib DOUBLE,
    mem_free_kib  DOUBLE,
    file_id       INTEGER NOT NULL
);

-- The view machine_capacity (listed vs observed GPUs per machine) is defined in
-- 006_left_queue.sql, which also counts the hosts of Slurm runs (attempt_hosts, from 002).
