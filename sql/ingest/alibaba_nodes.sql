-- Load one node list of Alibaba's cluster-trace-gpu-v2023 (openb_node_list_*.csv:
-- sn,cpu_milli,memory_mib,gpu,model) into machines: one row per node, source 'alibaba'.
-- Parameters: $path, $file_id, $encoding, $delim, $max_line_size, $header_text, $n_fields and
-- $pos_<column> (1-based position of each column in the header, NULL when absent), as in
-- alibaba_pods.sql; $max_gpus_per_node and $gpu_bound (gpucluster_analysis/bounds.py). Lines
-- are read whole and split (trace_lines, sql/ingest/trace_macros.sql), so every reject carries
-- its line number.
-- cpus = cpu_milli / 1000; an empty cpu_milli, memory_mib or model is stored as NULL (not
-- known); the GPU count is required: it is the capacity the node list is read for.

-- A count as written, when it is a finite number >= 0; else NULL (the row is rejected).
CREATE OR REPLACE TEMP MACRO node_count(t) AS (
    CASE WHEN isfinite(TRY_CAST(t AS DOUBLE)) AND TRY_CAST(t AS DOUBLE) >= 0 THEN TRY_CAST(t AS DOUBLE) END
);

CREATE OR REPLACE TEMP TABLE stage_node AS
SELECT line, text, n_fields, machine_id, cpu_text, memory_text, gpu_text, model,
       node_count(cpu_text) AS cpu_milli,
       node_count(memory_text) AS memory_mib,
       node_count(gpu_text) AS gpus,
       row_number() OVER (PARTITION BY machine_id ORDER BY line) AS copy_no
FROM (
    SELECT line, text, len(fields) AS n_fields,
           fields[$pos_sn] AS machine_id,
           fields[$pos_cpu_milli] AS cpu_text,
           fields[$pos_memory_mib] AS memory_text,
           fields[$pos_gpu] AS gpu_text,
           fields[$pos_model] AS model
    FROM trace_lines($path, $delim, $encoding, $max_line_size, $header_text)
);

-- Why a row cannot be stored; the first reason in this order wins.
CREATE OR REPLACE TEMP TABLE stage_node_problem AS
SELECT line, text, problem FROM (
    SELECT n.line, n.text,
        CASE
            WHEN n.n_fields <> $n_fields THEN n.n_fields || ' fields where the header has ' || $n_fields
            WHEN n.machine_id IS NULL THEN 'row without a node name (sn)'
            WHEN n.gpu_text IS NULL THEN 'node ' || n.machine_id || ' without a GPU count'
            WHEN n.gpus IS NULL OR n.gpus <> floor(n.gpus)
                THEN 'gpu is not a whole number of GPUs: ' || n.gpu_text
            WHEN n.gpus > $max_gpus_per_node THEN n.gpu_text || ' GPUs on one node' || $gpu_bound
            WHEN n.cpu_text IS NOT NULL AND n.cpu_milli IS NULL
                THEN 'cpu_milli is not a number of CPU millicores >= 0: ' || n.cpu_text
            WHEN n.memory_text IS NOT NULL AND n.memory_mib IS NULL
                THEN 'memory_mib is not a number of MiB >= 0: ' || n.memory_text
            WHEN n.copy_no > 1 THEN 'duplicate node name ' || n.machine_id || ' (first seen on an earlier line)'
            WHEN m.machine_id IS NOT NULL
                -- openb_node_list_gpu_node.csv renumbers the GPU nodes of openb_node_list_all_node.csv
                THEN 'node ' || n.machine_id || ' already stored from ' || m.path
                     || ' (the node lists describe the same cluster: ingest one per store)'
        END AS problem
    FROM stage_node n
    LEFT JOIN (SELECT DISTINCT ON (machine_id) machine_id, f.path
               FROM machines JOIN ingested_files f USING (file_id)
               ORDER BY machine_id, file_id) m USING (machine_id)
)
WHERE problem IS NOT NULL;

INSERT INTO rejects (file_id, line, reason, text)
SELECT $file_id, line, problem, left(text, 500) FROM stage_node_problem;

INSERT INTO machines (machine_id, listed_gpus, gpu_memory_gb, cpus, memory_mib, gpu_model, source, file_id)
SELECT machine_id, CAST(gpus AS INTEGER), NULL, cpu_milli / 1000, memory_mib, model, 'alibaba', $file_id
FROM stage_node
WHERE line NOT IN (SELECT line FROM stage_node_problem)
ORDER BY line;
