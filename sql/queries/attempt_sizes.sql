-- attempt_sizes: every attempt with its GPUs and machines, defined once for jobs.sql,
-- job_keys.sql and the report's GPU-time queries.
-- An attempt's size is the scheduler's (machine, GPU) list where it has one; else the GPU
-- count and machines the source gives for the attempt (Slurm TRES and NodeList, Helios
-- gpu_num/node_num, Alibaba's fractional GPUs). Philly writes 0 for an attempt it lists
-- without GPUs, so NULL means unknown, never none.
-- Parameters: none.
-- Output: source, job_id, attempt_no, start_at, end_at, gpus (DOUBLE; NULL: unknown),
-- servers (NULL: unknown).
-- Stage: every_job
WITH listed AS (
    SELECT source, job_id, attempt_no, count(*) AS gpus, count(DISTINCT machine_id) AS servers
    FROM allocations GROUP BY source, job_id, attempt_no
),
hosted AS (
    SELECT source, job_id, attempt_no, count(DISTINCT machine_id) AS servers
    FROM attempt_hosts GROUP BY source, job_id, attempt_no
)
SELECT a.source, a.job_id, a.attempt_no, a.start_at, a.end_at,
       coalesce(CAST(l.gpus AS DOUBLE), a.num_gpus) AS gpus,
       coalesce(l.servers, h.servers, a.num_nodes) AS servers
FROM attempts a
LEFT JOIN listed l USING (source, job_id, attempt_no)
LEFT JOIN hosted h USING (source, job_id, attempt_no)
