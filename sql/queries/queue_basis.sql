-- queue_basis: what the jobs' queueing delays are measured from (temp table report_jobs):
-- Eligible where the source records it (Slurm), else submission.
-- Parameters: none. Output: queue_basis ('eligible', 'submit'), jobs (with a delay).
SELECT queue_basis, count(*) AS jobs
FROM report_jobs
WHERE queue_delay_s IS NOT NULL
GROUP BY queue_basis
ORDER BY queue_basis
