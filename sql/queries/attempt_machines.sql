-- attempt_machines: the machines (and GPUs, where the source lists them) each attempt that
-- printed a speed ran on (temp table attempt_speeds), for per-machine and per-GPU speed.
-- From the scheduler's GPU list (allocations), else the machines the source names
-- (attempt_hosts) with GPU NULL.
-- Parameters: none.
-- Output: source, job_id, attempt_no, machine_id, gpu_index (NULL: the GPUs are unknown).
-- Stage: input
SELECT DISTINCT s.source, s.job_id, s.attempt_no, al.machine_id, al.gpu_index
FROM attempt_speeds s
JOIN allocations al USING (source, job_id, attempt_no)
UNION ALL
SELECT DISTINCT s.source, s.job_id, s.attempt_no, h.machine_id, CAST(NULL AS SMALLINT)
FROM attempt_speeds s
JOIN attempt_hosts h USING (source, job_id, attempt_no)
WHERE NOT EXISTS (SELECT 1 FROM allocations al
                  WHERE al.source = s.source AND al.job_id = s.job_id AND al.attempt_no = s.attempt_no)
