-- replay_holdings: what each started attempt held, machine by machine, for the replay of
-- queueing (gpucluster_analysis/replay). An attempt holds its GPUs for start <= t < end;
-- one with a start and no end holds them until its source's last timestamp (temp table
-- replay_bounds) or, GPU by GPU where the scheduler lists them, until the next attempt placed
-- on that GPU starts, whichever is first (Philly logs lose the end of some killed jobs' last
-- attempt: the GPUs were evidently free again when the scheduler gave them away); one
-- without a start holds nothing and is not listed.
-- Where it held them, most precise first: the scheduler's (machine, GPU) list (one row per
-- machine, gpus = GPUs listed there); the machines the source names (Slurm NodeList,
-- attempt_hosts: gpus there where known, else the attempt's GPUs split evenly);
-- else one row with machine_id NULL (Helios, Acme, Alibaba pods: the cluster's GPUs are
-- held, but where is unknown).
-- Needs the temp tables attempt_sizes, attempt_attribution and replay_bounds.
-- Parameters: none.
-- Output: source, job_id, attempt_no, vc, start_s, end_s (epoch seconds, DOUBLE),
-- machine_id (NULL: placement unknown), gpus (DOUBLE; NULL: the attempt's size is unknown),
-- user_name and qos (whose per-user caps the holding counts toward).
-- Stage: replay
WITH started AS (
    SELECT s.source, s.job_id, s.attempt_no, s.gpus, s.servers, s.start_at,
           coalesce(s.end_at, b.last_at) AS end_at
    FROM attempt_sizes s JOIN replay_bounds b USING (source)
    WHERE s.start_at IS NOT NULL
),
cells AS (
    SELECT al.source, al.job_id, al.attempt_no, al.machine_id, st.start_at, st.end_at, a.end_at IS NULL AS open_end,
           lead(st.start_at) OVER (PARTITION BY al.source, al.machine_id, al.gpu_index
                                   ORDER BY st.start_at, al.source, al.job_id, al.attempt_no) AS next_start
    FROM allocations al
    JOIN started st USING (source, job_id, attempt_no)
    JOIN attempts a USING (source, job_id, attempt_no)
),
listed AS (
    SELECT source, job_id, attempt_no, machine_id,
           CASE WHEN open_end AND next_start < end_at THEN next_start ELSE end_at END AS end_at,
           CAST(count(*) AS DOUBLE) AS gpus
    FROM cells GROUP BY ALL
),
-- GPUs per host that scontrol -d (or a one-host job's CUDA_VISIBLE_DEVICES) names, where
-- the accounting gives only the job's total (temp table attempt_attribution).
bound_counts AS (
    SELECT source, job_id, attempt_no, machine_id, count(DISTINCT gpu_index) AS gpus
    FROM attempt_attribution
    WHERE attribution IN ('scontrol', 'cuda_visible_devices') AND machine_id IS NOT NULL AND gpu_index IS NOT NULL
    GROUP BY ALL
),
-- (the key columns are never NULL: ANTI JOIN is NOT IN)
hosted AS (
    SELECT h.source, h.job_id, h.attempt_no, h.machine_id, coalesce(max(h.gpus), max(b.gpus)) AS gpus
    FROM attempt_hosts h
    LEFT JOIN bound_counts b USING (source, job_id, attempt_no, machine_id)
    ANTI JOIN listed l USING (source, job_id, attempt_no)
    GROUP BY h.source, h.job_id, h.attempt_no, h.machine_id
),
-- An attempt's hosts, where their GPUs are unknown, share its GPUs evenly: a started attempt
-- with hosts and no listed GPUs has as many as attempt_sizes' servers counts (its distinct
-- hosts), so that count is not taken again.
placed AS (
    SELECT st.source, st.job_id, st.attempt_no, st.start_at, l.end_at, l.machine_id, l.gpus
    FROM started st JOIN listed l USING (source, job_id, attempt_no)
    UNION ALL
    SELECT st.source, st.job_id, st.attempt_no, st.start_at, st.end_at, h.machine_id,
           coalesce(CAST(h.gpus AS DOUBLE), st.gpus / st.servers)
    FROM started st JOIN hosted h USING (source, job_id, attempt_no)
    UNION ALL
    SELECT st.source, st.job_id, st.attempt_no, st.start_at, st.end_at, NULL, st.gpus
    FROM started st
    ANTI JOIN listed l USING (source, job_id, attempt_no)
    ANTI JOIN hosted h USING (source, job_id, attempt_no)
)
SELECT p.source, p.job_id, p.attempt_no, j.vc,
       epoch(p.start_at) AS start_s, epoch(p.end_at) AS end_s, p.machine_id, p.gpus, j.user_name, j.qos
FROM placed p JOIN jobs j USING (source, job_id)
WHERE p.end_at > p.start_at
ORDER BY p.source, p.start_at, p.job_id, p.attempt_no, p.machine_id, p.end_at
