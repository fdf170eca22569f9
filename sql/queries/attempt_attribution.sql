-- attempt_attribution: how the GPU samples of each timed attempt are found, in order of
-- precision, and the (machine, GPU) cells that gives.
--   scheduler             the scheduler's log lists the (machine, GPU) pairs (Philly)
--   scontrol              GPU indices from `scontrol show job -d` (gpu_bindings)
--   cuda_visible_devices  GPU indices the job's log printed (gpu_bindings)
--   whole_node            the job held every GPU of each of its machines (or, where the
--                         source does not say how many it held there, no other job ran
--                         on them meanwhile): every GPU of them
--   node_level            machines known, GPUs not: every GPU of them, although other jobs
--                         or idle GPUs were there too (flagged: its utilization mixes them in)
--   none                  the source names no machines (Helios, Acme, Alibaba)
-- A binding names its attempt by attempts.source_index; without one (scontrol shows the
-- current run, slurm-<jobid>.out is rewritten by a requeue) it holds for the job's last
-- attempt in time only. A binding without a machine (CUDA_VISIBLE_DEVICES printed by the
-- batch script) is used only for an attempt on one machine: on several, the indices of
-- the others are unknown. A machine's GPUs are
-- indices 0..n-1, n the largest of its listed count, the indices telemetry describes
-- (gpu_devices) and the indices sampled on it.
-- Needs the temp table gpu_samples_by_machine.
-- Parameters: none.
-- Output: source, job_id, attempt_no, attribution, machine_id, gpu_index, gpus: the cells
-- are the GPUs gpu_index .. gpu_index + gpus - 1 of the machine. A whole_node or node_level
-- row is one machine's every GPU (gpu_index 0, gpus its GPUs; none where it has none known),
-- kept as one row, not one per GPU: a busy Slurm year has millions of such placements and
-- the readers that need single GPUs (the sample joins) expand only the windows in the
-- telemetry's span. Other rows are one GPU each (gpus 1; gpu_index NULL: the GPU is unknown,
-- and for none the machine too). start_at, end_at: the attempt's (timed: both set, end after
-- start), carried so that the window tables need not join attempts again.
-- Stage: every_job
WITH timed AS (
    SELECT source, job_id, attempt_no, source_index, start_at, end_at, num_gpus, num_nodes
    FROM attempts
    WHERE start_at IS NOT NULL AND end_at IS NOT NULL AND end_at > start_at
),
-- the last attempt in time of the jobs that a binding without an attempt names (only those:
-- ranking every job's attempts cost more than the rest of the bindings together)
last_attempts AS (
    SELECT source, job_id, attempt_no FROM attempts
    WHERE job_id IN (SELECT job_id FROM gpu_bindings WHERE attempt_ref IS NULL)
    QUALIFY row_number() OVER (PARTITION BY source, job_id
                               ORDER BY coalesce(start_at, end_at) DESC NULLS LAST, attempt_no DESC) = 1
),
listed AS (
    SELECT DISTINCT source, job_id, attempt_no FROM allocations
),
-- the attempt's times and sizes carried along, so that no reader below joins timed again
hosts AS (
    SELECT h.source, h.job_id, h.attempt_no, h.machine_id, h.gpus, t.start_at, t.end_at, t.num_gpus, t.num_nodes
    FROM attempt_hosts h JOIN timed t USING (source, job_id, attempt_no)
),
host_gpus AS (
    SELECT machine_id, max(gpus) AS gpus FROM (
        SELECT machine_id, listed_gpus AS gpus FROM machines WHERE machine_id IN (SELECT machine_id FROM hosts)
        UNION ALL
        SELECT machine_id, max(gpu_index) + 1 FROM gpu_devices WHERE machine_id IN (SELECT machine_id FROM hosts) GROUP BY machine_id
        UNION ALL
        -- the samples' side from the temp table gpu_samples_by_machine (one scan per report)
        SELECT machine_id, sampled_gpus FROM gpu_samples_by_machine WHERE machine_id IN (SELECT machine_id FROM hosts)
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
-- Whether a placement shared its machine decides only for the hosts where the attempt's
-- GPUs there are unknown (partial_hosts below); only those are looked up.
undecided AS (
    SELECT DISTINCT source, job_id, attempt_no, machine_id, start_at, end_at
    FROM hosts
    WHERE coalesce(gpus, CASE WHEN num_nodes = 1 THEN num_gpus END) IS NULL
),
-- A host placement [s, e) shared its machine when another job's placement there overlapped
-- it. Counted, not joined (a join on machine and overlapping time is quadratic in the
-- placements per machine: a busy Slurm year has a million on a few nodes): placements
-- overlapping [s, e) = those starting before e minus those ending by s; the same for the
-- job's own placements on the machine, which do not count. Each count is a running count in
-- one sort of the machine's starts (or ends) with the probes (e, or s) placed among them:
-- n log n. (Not ASOF joins: with few probes DuckDB turns those into nested loops over every
-- placement of the machine.) The sorts over every placement carry a probe's number only, not
-- its names (a million rows' strings through two sorts cost more than the counting).
probes AS (
    SELECT *, row_number() OVER (ORDER BY source, job_id, attempt_no, machine_id) AS probe_id FROM undecided
),
before_end AS (
    SELECT probe_id, n FROM (
        SELECT probe_id,
               -- at equal times a probe comes first: starts at e do not count
               sum(CASE WHEN probe_id IS NULL THEN 1 ELSE 0 END) OVER (
                   PARTITION BY machine_id ORDER BY t, probe_id IS NULL ROWS UNBOUNDED PRECEDING) AS n
        FROM (SELECT machine_id, start_at AS t, NULL::BIGINT AS probe_id FROM occupancy
              UNION ALL
              SELECT machine_id, end_at, probe_id FROM probes)
    ) WHERE probe_id IS NOT NULL
),
by_start AS (
    SELECT probe_id, n FROM (
        SELECT probe_id,
               -- at equal times a probe comes last: ends at s count
               sum(CASE WHEN probe_id IS NULL THEN 1 ELSE 0 END) OVER (
                   PARTITION BY machine_id ORDER BY t, probe_id IS NOT NULL ROWS UNBOUNDED PRECEDING) AS n
        FROM (SELECT machine_id, end_at AS t, NULL::BIGINT AS probe_id FROM occupancy
              UNION ALL
              SELECT machine_id, start_at, probe_id FROM probes)
    ) WHERE probe_id IS NOT NULL
),
own AS (
    SELECT o.* FROM occupancy o SEMI JOIN undecided u USING (source, job_id, machine_id)
),
own_before_end AS (
    SELECT * FROM (
        SELECT source, job_id, attempt_no, machine_id, probe,
               sum(CASE WHEN probe THEN 0 ELSE 1 END) OVER (
                   PARTITION BY machine_id, source, job_id ORDER BY t, probe DESC ROWS UNBOUNDED PRECEDING) AS n
        FROM (SELECT source, job_id, attempt_no, machine_id, start_at AS t, false AS probe FROM own
              UNION ALL
              SELECT source, job_id, attempt_no, machine_id, end_at, true FROM undecided)
    ) WHERE probe
),
own_by_start AS (
    SELECT * FROM (
        SELECT source, job_id, attempt_no, machine_id, probe,
               sum(CASE WHEN probe THEN 0 ELSE 1 END) OVER (
                   PARTITION BY machine_id, source, job_id ORDER BY t, probe ROWS UNBOUNDED PRECEDING) AS n
        FROM (SELECT source, job_id, attempt_no, machine_id, end_at AS t, false AS probe FROM own
              UNION ALL
              SELECT source, job_id, attempt_no, machine_id, start_at, true FROM undecided)
    ) WHERE probe
),
shared AS (
    SELECT u.source, u.job_id, u.attempt_no, u.machine_id
    FROM probes u
    JOIN before_end a USING (probe_id)
    JOIN by_start b USING (probe_id)
    JOIN own_before_end oa USING (source, job_id, attempt_no, machine_id)
    JOIN own_by_start ob USING (source, job_id, attempt_no, machine_id)
    WHERE (a.n - b.n) - (oa.n - ob.n) > 0
    GROUP BY ALL
),
host_counts AS (
    SELECT source, job_id, attempt_no, count(DISTINCT machine_id) AS machines FROM hosts GROUP BY ALL
),
-- Two equi-joins (named attempt, last attempt) rather than one OR-join DuckDB cannot hash.
bound_any AS (
    SELECT t.source, t.job_id, t.attempt_no, b.machine_id, b.gpu_index, b.origin
    FROM gpu_bindings b
    JOIN timed t ON t.job_id = b.job_id AND t.source_index = b.attempt_ref
    WHERE b.source IS NULL OR b.source = t.source
    UNION ALL
    SELECT t.source, t.job_id, t.attempt_no, b.machine_id, b.gpu_index, b.origin
    FROM gpu_bindings b
    JOIN timed t ON t.job_id = b.job_id
    SEMI JOIN last_attempts l ON l.source = t.source AND l.job_id = t.job_id AND l.attempt_no = t.attempt_no
    WHERE b.attempt_ref IS NULL AND (b.source IS NULL OR b.source = t.source)
),
bound AS (
    SELECT b.* FROM bound_any b
    LEFT JOIN host_counts c USING (source, job_id, attempt_no)
    WHERE b.machine_id IS NOT NULL OR c.machines = 1
),
-- Each host placement: the machine's GPUs (every one of them is a cell of a whole_node or
-- node_level attempt), and whether it was partial: the attempt held fewer GPUs than the
-- machine has there, or it is unknown how many it held and another job ran there meanwhile.
host_rows AS (
    SELECT h.source, h.job_id, h.attempt_no, h.machine_id, coalesce(g.gpus, h.gpus, 0) AS machine_gpus,
        CASE
            WHEN coalesce(h.gpus, CASE WHEN h.num_nodes = 1 THEN h.num_gpus END) IS NOT NULL
                THEN g.gpus IS NULL OR coalesce(h.gpus, h.num_gpus) < g.gpus
            ELSE s.machine_id IS NOT NULL
        END AS partial
    FROM hosts h
    LEFT JOIN host_gpus g USING (machine_id)
    LEFT JOIN shared s USING (source, job_id, attempt_no, machine_id)
),
-- Per attempt, one row per kind of evidence (left-joined below, not tested row by row with
-- EXISTS: each such test was a join over every timed attempt).
host_modes AS (
    SELECT source, job_id, attempt_no, CASE WHEN bool_or(partial) THEN 'node_level' ELSE 'whole_node' END AS mode
    FROM host_rows GROUP BY source, job_id, attempt_no
),
bound_modes AS (
    SELECT source, job_id, attempt_no,
           CASE WHEN bool_or(origin = 'scontrol') THEN 'scontrol'
                WHEN bool_or(origin = 'cuda_visible_devices') THEN 'cuda_visible_devices' END AS mode
    FROM bound GROUP BY source, job_id, attempt_no
),
modes AS (
    SELECT t.source, t.job_id, t.attempt_no, t.start_at, t.end_at,
        CASE
            WHEN l.job_id IS NOT NULL THEN 'scheduler'
            WHEN b.mode IS NOT NULL THEN b.mode
            WHEN h.mode IS NULL THEN 'none'
            ELSE h.mode
        END AS attribution
    FROM timed t
    LEFT JOIN listed l USING (source, job_id, attempt_no)
    LEFT JOIN bound_modes b USING (source, job_id, attempt_no)
    LEFT JOIN host_modes h USING (source, job_id, attempt_no)
)
SELECT m.source, m.job_id, m.attempt_no, m.attribution, al.machine_id, al.gpu_index, 1 AS gpus, m.start_at, m.end_at
FROM modes m JOIN allocations al USING (source, job_id, attempt_no)
WHERE m.attribution = 'scheduler'
UNION ALL
SELECT m.source, m.job_id, m.attempt_no, m.attribution, coalesce(b.machine_id, h.machine_id), b.gpu_index,
       CASE WHEN b.gpu_index IS NOT NULL THEN 1 END, m.start_at, m.end_at
FROM modes m
JOIN bound b ON b.source = m.source AND b.job_id = m.job_id AND b.attempt_no = m.attempt_no
            AND b.origin = m.attribution
LEFT JOIN hosts h ON b.machine_id IS NULL AND h.source = m.source AND h.job_id = m.job_id AND h.attempt_no = m.attempt_no
WHERE m.attribution IN ('scontrol', 'cuda_visible_devices') AND coalesce(b.machine_id, h.machine_id) IS NOT NULL
UNION ALL
SELECT m.source, m.job_id, m.attempt_no, m.attribution, h.machine_id, CAST(0 AS SMALLINT),
       CAST(h.machine_gpus AS INTEGER), m.start_at, m.end_at
FROM modes m
JOIN host_rows h USING (source, job_id, attempt_no)
WHERE m.attribution IN ('whole_node', 'node_level') AND h.machine_gpus > 0
UNION ALL
SELECT source, job_id, attempt_no, attribution, NULL, NULL, NULL, start_at, end_at
FROM modes WHERE attribution = 'none'
