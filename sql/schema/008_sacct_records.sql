-- Schema version 8: what gca keeps of each sacct record it stored, so that a later dump of
-- the same job (nightly dumps overlap) can replace it or be found identical (issue 15, part 6).
-- Idempotent: an older store is upgraded in place.

-- One row per (job, sacct file holding the stored record): the file whose rows are in jobs,
-- attempts and attempt_hosts, plus any later file whose record of the job was identical
-- (so that `--replace` of one of them hands the job to the other instead of dropping it).
--   finished  the record's last run is in a final state (COMPLETED, FAILED, CANCELLED, ...;
--             not PENDING, RUNNING, REQUEUED, SUSPENDED, ...)
--   last_at   the latest time the record names (its End when finished), UTC
--   digest    md5 of the record's lines and the zone they were read in; NULL: stored
--             before version 8, never identical to a new record
CREATE TABLE IF NOT EXISTS sacct_records (
    source   VARCHAR NOT NULL,     -- slurm
    job_id   VARCHAR USING COMPRESSION uncompressed NOT NULL,
    finished BOOLEAN NOT NULL,
    last_at  TIMESTAMP,
    digest   VARCHAR USING COMPRESSION uncompressed,  -- (as job_id in jobs: random hex compresses little)
    file_id  INTEGER NOT NULL
);

-- A store from before version 8: its sacct jobs get a record from what is stored of them.
INSERT INTO sacct_records (source, job_id, finished, last_at, digest, file_id)
SELECT j.source, j.job_id, j.status NOT IN ('running', 'pending', 'unknown'),
       greatest(j.submit_at, j.eligible_at, j.left_queue_at, a.last_start, a.last_end), NULL, j.file_id
FROM jobs j
JOIN ingested_files f ON f.file_id = j.file_id AND f.format = 'slurm_sacct'
LEFT JOIN (SELECT source, job_id, max(start_at) AS last_start, max(end_at) AS last_end
           FROM attempts GROUP BY source, job_id) a ON a.source = j.source AND a.job_id = j.job_id
WHERE (SELECT max(version) FROM schema_version) < getvariable('migration_version');

UPDATE schema_version SET version = getvariable('migration_version')
WHERE version < getvariable('migration_version');
