-- queue_basis: what the jobs' queueing delays are measured from (temp table job_facts):
-- Eligible where the source records it (Slurm), else submission.
-- Parameters: none. Output: queue_basis ('eligible', 'submit'), jobs (with a delay).
-- Stage: result
SELECT queue_basis, count(*) AS jobs
FROM job_facts
WHERE queue_delay_s IS NOT NULL
GROUP BY queue_basis
ORDER BY queue_basis
