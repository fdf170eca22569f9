-- Schema version 3: what the replay of queueing (why jobs wait) reads beside the core.
-- Every statement is idempotent, so an older store is upgraded in place.

-- Machines: what a node list says beyond its GPUs (Alibaba's openb_node_list_*.csv:
-- sn,cpu_milli,memory_mib,gpu,model). All nullable; Philly's machine list leaves them NULL.
ALTER TABLE machines ADD COLUMN IF NOT EXISTS cpus       DOUBLE;   -- CPU cores (cpu_milli / 1000)
ALTER TABLE machines ADD COLUMN IF NOT EXISTS memory_mib DOUBLE;
ALTER TABLE machines ADD COLUMN IF NOT EXISTS gpu_model  VARCHAR;
ALTER TABLE machines ADD COLUMN IF NOT EXISTS source     VARCHAR;  -- the job source whose cluster lists it (philly, alibaba, slurm); NULL: any

-- Jobs: the GPUs a job asked for, where the source gives a count (Alibaba num_gpu x
-- gpu_milli, Helios/Acme gpu_num, Slurm ReqTRES gres/gpu), kept also for a job that never
-- ran: a pending job waits for its request. jobs.csv's num_gpus falls back to it for a job
-- with no allocated attempt.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS requested_gpus DOUBLE;

-- Why the scheduler said a job was pending, as it said it at one moment (Slurm
-- `squeue -t PD -o '%i|%r'` snapshots, each under a timestamp line). One row per job and
-- snapshot; a pending array line (123_[6-11%3]) is one row per task it stands for.
CREATE TABLE IF NOT EXISTS pending_reasons (
    source      VARCHAR NOT NULL,      -- slurm
    job_id      VARCHAR NOT NULL,      -- as jobs.job_id of that source
    observed_at TIMESTAMP NOT NULL,    -- the snapshot's time, UTC
    reason      VARCHAR NOT NULL,      -- the scheduler's word: Resources, Priority, AssocGrpGRES, ...
    file_id     INTEGER NOT NULL,
    line        BIGINT
);

UPDATE schema_version SET version = getvariable('migration_version')
WHERE version < getvariable('migration_version');
