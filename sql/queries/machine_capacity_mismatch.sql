-- machine_capacity_mismatch: machines whose listed GPU count the data contradicts
-- (temp table machine_capacity_snapshot, a copy of the view machine_capacity): more GPUs observed in allocations or non-null samples than the
-- machine list says, or observed but missing from a machine list that exists.
-- Listed machines never observed are not contradictions and are not listed here.
-- Parameters: none.
-- Output: machine_id, listed_gpus, observed_gpus, issue.
-- Stage: result
SELECT machine_id, listed_gpus, observed_gpus,
       CASE WHEN listed_gpus IS NULL THEN 'not in the machine list'
            ELSE 'more GPUs observed than listed' END AS issue
FROM machine_capacity_snapshot
WHERE observed_gpus > listed_gpus
   OR (listed_gpus IS NULL AND EXISTS (SELECT 1 FROM machines))
ORDER BY issue, machine_id
