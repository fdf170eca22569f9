-- Before a sacct file is taken back (gca ingest --replace): the jobs whose stored record it
-- holds, and that a later file had identically (sacct_records), are handed to that file
-- instead of dropped with it; the rest of what it holds goes with it (ingest/forget.py).
-- Parameters: $file_id.

CREATE OR REPLACE TEMP TABLE stage_sacct_handover AS
SELECT r.job_id, max(r.file_id) AS to_file_id
FROM sacct_records r
JOIN jobs j ON j.source = r.source AND j.job_id = r.job_id AND j.file_id = $file_id
WHERE r.source = 'slurm' AND r.file_id <> $file_id
GROUP BY r.job_id;

UPDATE jobs SET file_id = h.to_file_id FROM stage_sacct_handover h
WHERE jobs.source = 'slurm' AND jobs.job_id = h.job_id AND jobs.file_id = $file_id;

UPDATE attempts SET file_id = h.to_file_id FROM stage_sacct_handover h
WHERE attempts.source = 'slurm' AND attempts.job_id = h.job_id AND attempts.file_id = $file_id;

UPDATE attempt_hosts SET file_id = h.to_file_id FROM stage_sacct_handover h
WHERE attempt_hosts.source = 'slurm' AND attempt_hosts.job_id = h.job_id AND attempt_hosts.file_id = $file_id;
