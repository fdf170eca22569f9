-- replay_machines: the machines of each source's cluster and their GPU capacity, for the
-- replay of queueing. A machine belongs to a source that placed an attempt on it
-- (allocations, attempt_hosts) or whose node list names it (machines.source). A machine
-- listed without a source (a machine list ingested before schema v3) or seen only in GPU
-- samples belongs to the store's only source, or else to its only source that places
-- attempts on machines; otherwise to none (source NULL: the replay leaves it out and says so).
-- Capacity: the larger of listed and observed GPUs (temp table machine_capacity_snapshot, as
-- the Overview counts) and of the most GPUs one attempt held there.
-- Parameters: none.
-- Output: source, machine_id, listed_gpus, observed_gpus, gpus (capacity), placed (some
-- attempt of the source names it).
-- Stage: replay
WITH placed AS (
    SELECT DISTINCT source, machine_id FROM allocations
    UNION SELECT DISTINCT source, machine_id FROM attempt_hosts
),
held AS (
    SELECT source, machine_id, max(gpus) AS gpus FROM (
        SELECT source, machine_id, count(*) AS gpus FROM allocations GROUP BY source, job_id, attempt_no, machine_id
        UNION ALL
        SELECT source, machine_id, gpus FROM attempt_hosts WHERE gpus IS NOT NULL
    ) GROUP BY source, machine_id
),
listed AS (
    SELECT DISTINCT source, machine_id FROM machines WHERE source IS NOT NULL
),
claimed AS (
    SELECT source, machine_id, bool_or(is_placed) AS placed FROM (
        SELECT source, machine_id, true AS is_placed FROM placed
        UNION ALL SELECT source, machine_id, false FROM listed
    ) GROUP BY source, machine_id
),
orphan_owner AS (
    SELECT CASE
        WHEN (SELECT count(DISTINCT source) FROM jobs) = 1 THEN (SELECT min(source) FROM jobs)
        WHEN (SELECT count(DISTINCT source) FROM placed) = 1 THEN (SELECT min(source) FROM placed)
    END AS source
),
owned AS (
    SELECT source, machine_id, placed FROM claimed
    UNION ALL
    SELECT (SELECT source FROM orphan_owner), c.machine_id, false
    FROM machine_capacity_snapshot c
    WHERE c.machine_id NOT IN (SELECT machine_id FROM claimed)
)
SELECT o.source, o.machine_id, c.listed_gpus, c.observed_gpus,
       greatest(coalesce(c.gpus, 0), coalesce(h.gpus, 0)) AS gpus,
       o.placed
FROM owned o
LEFT JOIN machine_capacity_snapshot c USING (machine_id)
LEFT JOIN held h ON h.source = o.source AND h.machine_id = o.machine_id
ORDER BY o.source NULLS LAST, o.machine_id
