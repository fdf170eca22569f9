-- Load Philly's cluster_machine_list (machineId, number of GPUs, single GPU mem) into machines.
-- Parameters: $path, $file_id, $columns (machine_id, gpus, gpu_mem), $header, $max_gpus_per_node
-- and $gpu_bound (gpucluster_analysis/bounds.py).
-- The listed GPU counts are known to be wrong for some machines (philly-traces
-- issue #8); they are stored as listed and compared with what the data shows.

CREATE OR REPLACE TEMP TABLE stage_machine AS
SELECT * FROM philly_csv($path, $header, $columns);

CREATE OR REPLACE TEMP TABLE stage_machine_checked AS
SELECT
    nullif(trim(machine_id), '') AS machine_id,
    TRY_CAST(trim(gpus) AS INTEGER) AS listed_gpus,
    TRY_CAST(nullif(regexp_extract(trim(gpu_mem), '^([0-9.]+)\s*(GB|G|GiB)?$', 1), '') AS DOUBLE) AS gpu_memory_gb,
    gpus, gpu_mem,
    row_number() OVER (PARTITION BY trim(machine_id)) AS copy_no
FROM stage_machine;

CREATE OR REPLACE TEMP TABLE stage_machine_problem AS
SELECT *, CASE
    WHEN machine_id IS NULL THEN 'row without a machine id'
    WHEN listed_gpus IS NULL OR listed_gpus < 0 THEN 'unreadable GPU count ' || coalesce(gpus, '(empty)')
    WHEN listed_gpus > $max_gpus_per_node THEN listed_gpus || ' GPUs on one node' || $gpu_bound
    WHEN gpu_mem IS NOT NULL AND gpu_memory_gb IS NULL THEN 'unreadable GPU memory ' || gpu_mem
    WHEN copy_no > 1 THEN 'machine listed twice'
END AS problem
FROM stage_machine_checked;

INSERT INTO rejects (file_id, line, reason, text)
SELECT $file_id, NULL, problem, concat_ws(',', machine_id, trim(gpus), trim(gpu_mem))
FROM stage_machine_problem WHERE problem IS NOT NULL;

-- stored by machine_list_store.sql (a machine an earlier list gave: unchanged or superseded)
CREATE OR REPLACE TEMP TABLE stage_machine_rows AS
SELECT machine_id, listed_gpus, gpu_memory_gb, NULL::DOUBLE AS cpus, NULL::DOUBLE AS memory_mib,
       NULL::VARCHAR AS gpu_model
FROM stage_machine_problem WHERE problem IS NULL;
