-- job_attempts_by_status: how many jobs had 0, 1, 2, ... attempts, per final status
-- (every attempt after the first is a retry).
-- Needs the temp table job_facts. Parameters: none.
-- Output: attempts, status, jobs.
-- Stage: result
SELECT attempts, status, count(*) AS jobs
FROM job_facts
GROUP BY attempts, status
ORDER BY attempts, status
