-- machine_capacity_snapshot: the view machine_capacity (listed vs observed GPUs per machine),
-- computed once per report: the view scans every GPU sample, so the report reads this copy.
-- Parameters: none.
-- Output: machine_id, listed_gpus, observed_gpus, gpu_memory_gb, gpus.
SELECT * FROM machine_capacity
