-- attempt_attribution: how the GPU samples of each timed attempt are found, in order of
-- precision, and the (machine, GPU) cells that gives.
--   scheduler             the scheduler's log lists the (machine, GPU) pairs (Philly)
--   scontrol              GPU indices from `scontrol show job -d` (gpu_bindings)
--   cuda_visible_devices  GPU indices the job's log printed (gpu_bindings)
--   whole_node            the job had each of its machines to itself: every GPU of them
--   node_level            machines known, GPUs not: every GPU of them, although other jobs
--                         ran there too (flagged: its utilization mixes in theirs)
--   none                  the source names no machines (Helios, Acme, Alibaba)
-- A binding without a machine holds on every machine of the attempt. A machine's GPUs are
-- indices 0..n-1, n the largest of its listed count, the indices telemetry describes
-- (gpu_devices) and the indices sampled on it.
-- Parameters: none.
-- Output: source, job_id, attempt_no, attribution, machine_id, gpu_index (NULL for none).
WITH timed AS (
    SELECT source, job_id, attempt_no, source_index, start_at, end_at, num_gpus, num_nodes
    FROM attempts
    WHERE start_at IS NOT NULL AND end_at IS NOT NULL AND end_at > start_at
),
listed AS (
    SELECT DISTINCT source, job_id, attempt_no FROM allocations
),
hosts AS (
    SELECT h.source, h.job_id, h.attempt_no, h.machine_id, h.gpus, t.start_at, t.end_at
    FROM attempt_hosts h JOIN timed t USING (source, job_id, attempt_no)
),
host_gpus AS (
    SELECT machine_id, max(gpus) AS gpus FROM (
        SELECT machine_id, listed_gpus AS gpus FROM machines WHERE machine_id IN (SELECT machine_id FROM hosts)
        UNION ALL
        SELECT machine_id, max(gpu_index) + 1 FROM gpu_devices WHERE machine_id IN (SELECT machine_id FROM hosts) GROUP BY machine_id
        UNION ALL
        SELECT machine_id, max(gpu_index) + 1 FROM gpu_samples WHERE machine_id IN (SELECT machine_id FROM hosts) GROUP BY machine_id
    ) GROUP BY machine_id
),
-- Every placement on a machine, from either kind of source, to see who shared it.
occupancy AS (
    SELECT source, job_id, attempt_no, machine_id, start_at, end_at FROM hosts
    UNION
    SELECT al.source, al.job_id, al.attempt_no, al.machine_id, t.start_at, t.end_at
    FROM allocations al JOIN timed t USING (source, job_id, attempt_no)
    WHERE al.machine_id IN (SELECT machine_id FROM hosts)
),
shared AS (
    SELECT DISTINCT h.source, h.job_id, h.attempt_no, h.machine_id
    FROM hosts h JOIN occupancy o
      ON o.machine_id = h.machine_id AND o.start_at < h.end_at AND h.start_at < o.end_at
     AND NOT (o.source = h.source AND o.job_id = h.job_id)
),
bound AS (
    SELECT t.source, t.job_id, t.attempt_no, b.machine_id, b.gpu_index, b.origin
    FROM gpu_bindings b
    JOIN timed t ON t.job_id = b.job_id AND (b.source IS NULL OR b.source = t.source)
                AND (b.attempt_ref IS NULL OR b.attempt_ref = t.source_index)
),
modes AS (
    SELECT t.source, t.job_id, t.attempt_no,
        CASE
            WHEN l.job_id IS NOT NULL THEN 'scheduler'
            WHEN EXISTS (SELECT 1 FROM bound b WHERE b.source = t.source AND b.job_id = t.job_id
                         AND b.attempt_no = t.attempt_no AND b.origin = 'scontrol') THEN 'scontrol'
            WHEN EXISTS (SELECT 1 FROM bound b WHERE b.source = t.source AND b.job_id = t.job_id
                         AND b.attempt_no = t.attempt_no AND b.origin = 'cuda_visible_devices') THEN 'cuda_visible_devices'
            WHEN NOT EXISTS (SELECT 1 FROM hosts h WHERE h.source = t.source AND h.job_id = t.job_id
                             AND h.attempt_no = t.attempt_no) THEN 'none'
            WHEN NOT EXISTS (SELECT 1 FROM shared s WHERE s.source = t.source AND s.job_id = t.job_id
                             AND s.attempt_no = t.attempt_no) THEN 'whole_node'
            ELSE 'node_level'
        END AS attribution
    FROM timed t
    LEFT JOIN listed l USING (source, job_id, attempt_no)
)
SELECT m.source, m.job_id, m.attempt_no, m.attribution, al.machine_id, al.gpu_index
FROM modes m JOIN allocations al USING (source, job_id, attempt_no)
WHERE m.attribution = 'scheduler'
UNION ALL
SELECT m.source, m.job_id, m.attempt_no, m.attribution, coalesce(b.machine_id, h.machine_id), b.gpu_index
FROM modes m
JOIN bound b ON b.source = m.source AND b.job_id = m.job_id AND b.attempt_no = m.attempt_no
            AND b.origin = m.attribution
LEFT JOIN hosts h ON b.machine_id IS NULL AND h.source = m.source AND h.job_id = m.job_id AND h.attempt_no = m.attempt_no
WHERE m.attribution IN ('scontrol', 'cuda_visible_devices') AND coalesce(b.machine_id, h.machine_id) IS NOT NULL
UNION ALL
SELECT m.source, m.job_id, m.attempt_no, m.attribution, h.machine_id,
       CAST(unnest(range(0, coalesce(g.gpus, h.gpus, 0))) AS SMALLINT)
FROM modes m
JOIN hosts h USING (source, job_id, attempt_no)
LEFT JOIN host_gpus g USING (machine_id)
WHERE m.attribution IN ('whole_node', 'node_level')
UNION ALL
SELECT source, job_id, attempt_no, attribution, NULL, NULL
FROM modes WHERE attribution = 'none'
