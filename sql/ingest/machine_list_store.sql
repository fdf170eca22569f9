-- Store a machine list's rows (Philly's cluster_machine_list, Slurm's scontrol/sinfo nodes): one
-- rule for a list that names a machine gca already holds from an earlier list of the same
-- source. The same values again are no news (unchanged: the earlier row stays); other values
-- are the later word on it (superseded: the earlier rows go, this file's row is stored).
-- Parameters: $file_id, $source. Needs stage_machine_rows (machine_id, listed_gpus,
-- gpu_memory_gb, cpus, memory_mib, gpu_model): the file's rows, one per machine.
-- Leaves stage_machine_choice (machine_id, had, same) for the counts.

CREATE OR REPLACE TEMP TABLE stage_machine_choice AS
WITH stored AS (
    SELECT machine_id, listed_gpus, gpu_memory_gb, cpus, memory_mib, gpu_model
    FROM machines WHERE source = $source AND machine_id IN (SELECT machine_id FROM stage_machine_rows)
)
SELECT n.machine_id,
       EXISTS (SELECT 1 FROM stored s WHERE s.machine_id = n.machine_id) AS had,
       EXISTS (SELECT 1 FROM stored s WHERE s.machine_id = n.machine_id)
       AND NOT EXISTS (
           SELECT 1 FROM stored s
           WHERE s.machine_id = n.machine_id
             AND (s.listed_gpus IS DISTINCT FROM n.listed_gpus OR s.gpu_memory_gb IS DISTINCT FROM n.gpu_memory_gb
                  OR s.cpus IS DISTINCT FROM n.cpus OR s.memory_mib IS DISTINCT FROM n.memory_mib
                  OR s.gpu_model IS DISTINCT FROM n.gpu_model)
       ) AS same
FROM stage_machine_rows n;

DELETE FROM machines
WHERE source = $source AND machine_id IN (SELECT machine_id FROM stage_machine_choice WHERE had AND NOT same);

INSERT INTO machines (machine_id, listed_gpus, gpu_memory_gb, cpus, memory_mib, gpu_model, source, file_id)
SELECT n.machine_id, n.listed_gpus, n.gpu_memory_gb, n.cpus, n.memory_mib, n.gpu_model, $source, $file_id
FROM stage_machine_rows n JOIN stage_machine_choice c USING (machine_id)
WHERE NOT c.same;
